// Hostile stdlib calls: see hostile.star.

function big(s) { return s.repeat(Math.floor((8 << 20) / s.length)); }

function json_decode_bomb(request) { return json.decode("[" + big("0,") + "0]").length; }
function json_decode_objects_bomb(request) { return json.decode("[" + big("{},") + "0]").length; }
function json_encode_escapes_bomb(request) { return json.encode([big("\x01").slice(0, 4 << 20)]).length; }
function yaml_decode_bomb(request) { return yaml.decode(big("- 0\n")).length; }
function yaml_decode_flow_bomb(request) { return yaml.decode("[" + big("0,") + "0]").length; }
function strings_split_bomb(request) { return strings.split(big("x,"), ",").length; }
function strings_split_runes_bomb(request) { return strings.split(big("x"), "").length; }
function strings_fields_bomb(request) { return strings.fields(big("x ")).length; }
function re_find_all_empty_bomb(request) { return re.find_all("", big("x")).length; }
function re_split_empty_bomb(request) { return re.split("", big("x")).length; }
function re_replace_bomb(request) { return re.replace("x", big("x"), "x").length; }
function re_pattern_bomb(request) { return re.match("a".repeat(2 << 20), "b"); }
function time_parse_quote_bomb(request) { return time.parse(big("\x01")); }
function quantity_bomb(request) { return k8s.parse_quantity("1" + big("0").slice(0, 1 << 20)); }
function selector_bomb(request) { return k8s.match_selector("a in (" + big("x,") + "x)", {}); }
function name_bomb(request) { return k8s.name(big("A."), null, 253); }
function shared_argument_bomb(request) {
  var e = {key: "a", operator: "Exists"}, l = [e];
  for (var i = 0; i < 20; i++) l = l.concat(l);
  return k8s.match_selector({matchExpressions: l}, {});
}
