function check() {
  throw new Error("misconfigured");
}

check();

function sync(request) {
  return 1;
}
