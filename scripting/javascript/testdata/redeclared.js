function sync(request) {
  return {};
}
let x = 1;
let x = 2;
