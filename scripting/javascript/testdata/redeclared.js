function sync(request) {
  let a = 1;
  let a = 2;
  return a;
}
