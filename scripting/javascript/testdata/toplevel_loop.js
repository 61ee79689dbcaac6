var x = 0;
while (true) {
  x++;
}

function sync(request) {
  return x;
}
