function sync(request) {
  var now = time.now();
  var later = time.add(now, "1h30m");
  return {
    now: now,
    parse: time.parse("2024-05-01T14:30:00.250+02:00"),
    parse_layout: time.parse("01/05/2024", "02/01/2006"),
    format: time.format(now, "DateOnly"),
    format_default: time.format("2024-05-01T12:30:00.25Z"),
    unix: time.unix("1970-01-01T00:01:40.5Z"),
    from_unix: time.from_unix(1714564800.5),
    parse_duration: time.parse_duration("1h30m"),
    format_duration: time.format_duration(5400),
    add: later,
    add_seconds: time.add(now, -90),
    sub: time.sub(later, now),
    since: time.since("2024-05-01T11:00:00Z"),
    compare: [time.compare(now, later), time.compare(later, now), time.compare(now, "2024-05-01T14:00:00+02:00")],
    before: time.before(now, later),
    after: time.after(now, later),
    constants: [time.SECOND, time.MINUTE, time.HOUR, time.DAY],
    ready_age: time.sub(now, request.parent.status.conditions[0].lastTransitionTime),
  };
}
