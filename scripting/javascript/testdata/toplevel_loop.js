while (true) {}
function sync(request) {}
