function sync(request) {
  return json.decode(true);
}
