function sync(request) {
  var uid = request.parent.metadata.uid;
  return {
    sha256: hash.sha256("abc"),
    sha256_unicode: hash.sha256("ünïcode"),
    short: hash.short(uid),
    short_6: hash.short(uid, 6),
  };
}
