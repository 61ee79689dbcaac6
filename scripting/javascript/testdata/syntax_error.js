function sync(request) {
  return { a: 1 b: 2 };
}
