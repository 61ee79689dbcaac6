function sync(request) {
  return k8s.match_selector({"matchlabels": {}}, {});
}
