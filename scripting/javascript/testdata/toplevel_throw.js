const config = loadConfig();

function loadConfig() {
  throw new Error("misconfigured");
}

function sync(request) {
  return config;
}
