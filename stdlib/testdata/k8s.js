function sync(request) {
  var parent = request.parent;
  var labels = parent.metadata.labels;
  var memory = parent.spec.memory;
  var cm = request.children["ConfigMap.v1"]["corner-shop-web"];
  var updated = k8s.set_condition(parent, {type: "Ready", status: "True", reason: "Up"});
  return {
    match_selector: [
      k8s.match_selector(parent.spec.selector, labels),
      k8s.match_selector({matchLabels: {app: "db"}}, labels),
      k8s.match_selector("app=shop,env!=dev", labels),
      k8s.match_selector(null, labels),
    ],
    get_condition: k8s.get_condition(parent, "Synced"),
    find_condition: k8s.find_condition(parent, {status: "False"}),
    has_condition: [k8s.has_condition(parent, "Ready"), k8s.has_condition(parent, "Synced")],
    set_condition: updated.status.conditions,
    input_unchanged: parent.status.conditions[0].status,
    remove_condition: k8s.remove_condition(parent.status.conditions, "Ready"),
    make_owner_ref: k8s.make_owner_ref(parent),
    make_owner_ref_plain: k8s.make_owner_ref(parent, false, false).controller,
    get_controller_ref: k8s.get_controller_ref(cm).uid,
    is_controlled_by: [k8s.is_controlled_by(cm, parent), k8s.is_controlled_by(parent, parent)],
    parse_quantity: [k8s.parse_quantity(memory), k8s.parse_quantity("1.5")],
    quantity_value: k8s.quantity_value("500m"),
    compare_quantities: [k8s.compare_quantities("1Gi", memory), k8s.compare_quantities("500m", 0.5)],
    add_quantities: k8s.add_quantities(memory, "512Mi"),
    name: [
      k8s.name([parent.metadata.name, "web"]),
      k8s.name([parent.metadata.name, "web"], parent.spec),
      k8s.name("x".repeat(70)),
      k8s.name("a.b", null, 253),
    ],
    merge: k8s.merge({a: 1, b: {c: 2, d: [1]}}, {b: {c: null, d: [2]}, e: "new"}),
  };
}
