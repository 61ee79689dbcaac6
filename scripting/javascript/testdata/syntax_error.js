function sync(request) {
  return {
    children: [
      { name: "a" }
      { name: "b" },
    ],
  };
}
