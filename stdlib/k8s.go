package stdlib

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// K8s is the k8s module: Kubernetes conventions over objects in their JSON shape. No
// function mutates its arguments; those that "set" return a new value.
//
// Label selectors
//
//	match_selector(selector, labels) -> bool
//	    selector is a LabelSelector dict ({"matchLabels": {...}, "matchExpressions": [{"key",
//	    "operator": In|NotIn|Exists|DoesNotExist, "values"}]}) or a selector string
//	    ("app=web,tier in (a,b)"). An empty dict matches everything; a null selector matches
//	    nothing, as metav1.LabelSelectorAsSelector. labels is a dict of strings or null.
//	    Unknown fields and invalid operators or values are errors.
//
// Conditions. obj is an object whose status.conditions is a list of condition dicts, or that
// list itself; set_condition and remove_condition return a value of the same kind.
//
//	get_condition(obj, type) -> dict or null        the condition of that type
//	find_condition(obj, match) -> dict or null      the first condition whose fields equal every field of match
//	has_condition(obj, type, status="True") -> bool
//	set_condition(obj, condition) -> obj
//	    Replaces the condition of the same type in place or appends it. condition needs a
//	    string type and a status of "True", "False" or "Unknown". Unless it has its own
//	    lastTransitionTime, it keeps the old one when the status is unchanged and takes now()
//	    (RFC 3339, whole seconds, as metav1.Time) when the status changes or is new.
//	remove_condition(obj, type) -> obj
//
// Owner references
//
//	make_owner_ref(parent, controller=True, block_owner_deletion=True) -> dict
//	    {apiVersion, kind, name, uid, controller, blockOwnerDeletion} of parent, which must
//	    have all four identity fields.
//	get_controller_ref(obj) -> dict or null   the owner reference with controller: true
//	is_controlled_by(obj, parent) -> bool     obj's controller reference has parent's uid
//
// Resource quantities: a quantity is a string ("500m", "1Gi", "1.5", at most 64 characters)
// or a number.
//
//	parse_quantity(q) -> string              canonical form: "1.5" -> "1500m", "1024Mi" -> "1Gi"
//	quantity_value(q) -> float               approximate value: "500m" -> 0.5
//	compare_quantities(a, b) -> int          -1, 0 or 1
//	add_quantities(a, b) -> string           a + b in canonical form
//
// Names
//
//	name(parts, hash=null, max_length=63) -> string
//	    A valid DNS-1123 name from parts (a string or a list of strings joined with "-"):
//	    lowercased, every character outside [a-z0-9-] replaced by "-" (dots are kept when
//	    max_length > 63, which makes it a DNS-1123 subdomain instead of a label), leading and
//	    trailing separators dropped. When hash is given (a string, or any value hashed as its
//	    json.encode) the name ends in "-" and its 10-character hash.short; otherwise a name
//	    longer than max_length is cut and ends in the hash of the whole name, so distinct
//	    long names stay distinct and the same parts always give the same name. max_length is
//	    1 to 253.
//
// Values
//
//	merge(base, overlay) -> value
//	    Deep merge with JSON Merge Patch semantics (RFC 7386): dicts merge key by key, a null
//	    in overlay removes the key, any other overlay value (lists included) replaces.
var K8s = &Module{
	Name: "k8s",
	Functions: map[string]Func{
		"match_selector":     define("k8s.match_selector", []string{"selector", "labels"}, k8sMatchSelector),
		"get_condition":      define("k8s.get_condition", []string{"obj", "type"}, k8sGetCondition),
		"find_condition":     define("k8s.find_condition", []string{"obj", "match"}, k8sFindCondition),
		"has_condition":      define("k8s.has_condition", []string{"obj", "type", "status?"}, k8sHasCondition),
		"set_condition":      define("k8s.set_condition", []string{"obj", "condition"}, k8sSetCondition),
		"remove_condition":   define("k8s.remove_condition", []string{"obj", "type"}, k8sRemoveCondition),
		"make_owner_ref":     define("k8s.make_owner_ref", []string{"parent", "controller?", "block_owner_deletion?"}, k8sMakeOwnerRef),
		"get_controller_ref": define("k8s.get_controller_ref", []string{"obj"}, k8sGetControllerRef),
		"is_controlled_by":   define("k8s.is_controlled_by", []string{"obj", "parent"}, k8sIsControlledBy),
		"parse_quantity":     define("k8s.parse_quantity", []string{"q"}, k8sParseQuantity),
		"quantity_value":     define("k8s.quantity_value", []string{"q"}, k8sQuantityValue),
		"compare_quantities": define("k8s.compare_quantities", []string{"a", "b"}, k8sCompareQuantities),
		"add_quantities":     define("k8s.add_quantities", []string{"a", "b"}, k8sAddQuantities),
		"name":               define("k8s.name", []string{"parts", "hash?", "max_length?"}, k8sName),
		"merge":              define("k8s.merge", []string{"base", "overlay"}, k8sMerge),
	},
}

// --- label selectors

func k8sMatchSelector(env *Env, a *args) (any, error) {
	var sel labels.Selector
	switch s := a.value(0).(type) {
	case nil:
		sel = labels.Nothing()
	case string:
		// labels.Parse makes about 80 bytes per byte of selector (its tokens and value sets).
		if err := a.reserve(env, int64(len(s))*perSelectorByte); err != nil {
			return nil, err
		}
		parsed, err := labels.Parse(s)
		if err != nil {
			return nil, a.argErrorf(0, "invalid label selector: %v", err)
		}
		sel = parsed
	case map[string]any:
		ls, err := labelSelector(s)
		if err != nil {
			return nil, a.argErrorf(0, "invalid label selector: %v", err)
		}
		n := int64(len(ls.MatchLabels) + len(ls.MatchExpressions))
		for _, e := range ls.MatchExpressions {
			n += int64(len(e.Values))
		}
		if err := a.reserve(env, n*perSelectorTerm); err != nil {
			return nil, err
		}
		if sel, err = metav1.LabelSelectorAsSelector(ls); err != nil {
			return nil, a.argErrorf(0, "invalid label selector: %v", err)
		}
	default:
		return nil, a.typeError(0, "dict or string")
	}
	set := labels.Set{}
	switch l := a.value(1).(type) {
	case nil:
	case map[string]any:
		for k, v := range l {
			s, ok := v.(string)
			if !ok {
				return nil, a.argErrorf(1, "value of %s: expected string, got %s", quote(k), typeName(v))
			}
			set[k] = s
		}
	default:
		return nil, a.typeError(1, "dict")
	}
	return sel.Matches(set), nil
}

// What turning a selector into a labels.Selector costs: per byte of a selector string, and
// per label, expression or value of a LabelSelector dict.
const (
	perSelectorByte = 80
	perSelectorTerm = 128
)

// labelSelector reads a LabelSelector from its JSON shape, strictly: field names are case
// sensitive and unknown ones are errors, so a typo cannot silently widen a selector.
func labelSelector(m map[string]any) (*metav1.LabelSelector, error) {
	ls := &metav1.LabelSelector{}
	for k, v := range m {
		switch k {
		case "matchLabels":
			if v == nil {
				continue
			}
			labels, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("matchLabels: expected dict, got %s", typeName(v))
			}
			ls.MatchLabels = make(map[string]string, len(labels))
			for lk, lv := range labels {
				s, ok := lv.(string)
				if !ok {
					return nil, fmt.Errorf("matchLabels.%s: expected string, got %s", lk, typeName(lv))
				}
				ls.MatchLabels[lk] = s
			}
		case "matchExpressions":
			if v == nil {
				continue
			}
			exprs, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("matchExpressions: expected list, got %s", typeName(v))
			}
			for i, e := range exprs {
				req, err := labelSelectorRequirement(e)
				if err != nil {
					return nil, fmt.Errorf("matchExpressions[%d]%s", i, err)
				}
				ls.MatchExpressions = append(ls.MatchExpressions, req)
			}
		default:
			return nil, fmt.Errorf("unknown field %s (want matchLabels or matchExpressions)", quote(k))
		}
	}
	return ls, nil
}

// labelSelectorRequirement reads one matchExpressions entry; its errors start with the field
// path below the entry, e.g. ".values[1]: expected string, got int".
func labelSelectorRequirement(e any) (metav1.LabelSelectorRequirement, error) {
	var req metav1.LabelSelectorRequirement
	m, ok := e.(map[string]any)
	if !ok {
		return req, fmt.Errorf(": expected dict, got %s", typeName(e))
	}
	for k, v := range m {
		switch k {
		case "key", "operator":
			s, ok := v.(string)
			if !ok {
				return req, fmt.Errorf(".%s: expected string, got %s", k, typeName(v))
			}
			if k == "key" {
				req.Key = s
			} else {
				req.Operator = metav1.LabelSelectorOperator(s)
			}
		case "values":
			if v == nil {
				continue
			}
			vals, ok := v.([]any)
			if !ok {
				return req, fmt.Errorf(".values: expected list, got %s", typeName(v))
			}
			for j, x := range vals {
				s, ok := x.(string)
				if !ok {
					return req, fmt.Errorf(".values[%d]: expected string, got %s", j, typeName(x))
				}
				req.Values = append(req.Values, s)
			}
		default:
			return req, fmt.Errorf(": unknown field %s (want key, operator or values)", quote(k))
		}
	}
	return req, nil
}

// --- conditions

// conditions returns the condition list of argument i, which is an object or a list.
func (a *args) conditions(i int) ([]any, error) {
	switch v := a.value(i).(type) {
	case []any:
		return v, nil
	case map[string]any:
		status, ok := v["status"]
		if !ok || status == nil {
			return nil, nil
		}
		sm, ok := status.(map[string]any)
		if !ok {
			return nil, a.argErrorf(i, "status: expected dict, got %s", typeName(status))
		}
		conds, ok := sm["conditions"]
		if !ok || conds == nil {
			return nil, nil
		}
		l, ok := conds.([]any)
		if !ok {
			return nil, a.argErrorf(i, "status.conditions: expected list, got %s", typeName(conds))
		}
		return l, nil
	}
	return nil, a.typeError(i, "object or list of conditions")
}

// withConditions returns argument i, object or list, as a new value holding conds.
func (a *args) withConditions(i int, conds []any) any {
	obj, ok := a.value(i).(map[string]any)
	if !ok {
		return conds
	}
	out := deepCopy(obj).(map[string]any)
	status, _ := out["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		out["status"] = status
	}
	status["conditions"] = conds
	return out
}

func conditionIndex(conds []any, typ string) int {
	for i, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return i
		}
	}
	return -1
}

func k8sGetCondition(env *Env, a *args) (any, error) {
	conds, err := a.conditions(0)
	if err != nil {
		return nil, err
	}
	typ, err := a.string(1)
	if err != nil {
		return nil, err
	}
	if i := conditionIndex(conds, typ); i >= 0 {
		return deepCopy(conds[i]), nil
	}
	return nil, nil
}

func k8sFindCondition(env *Env, a *args) (any, error) {
	conds, err := a.conditions(0)
	if err != nil {
		return nil, err
	}
	match, err := a.dict(1)
	if err != nil {
		return nil, err
	}
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && matchesFields(m, match) {
			return deepCopy(m), nil
		}
	}
	return nil, nil
}

func matchesFields(m, match map[string]any) bool {
	for k, want := range match {
		got, ok := m[k]
		if !ok || !jsonEqual(got, want) {
			return false
		}
	}
	return true
}

func k8sHasCondition(env *Env, a *args) (any, error) {
	conds, err := a.conditions(0)
	if err != nil {
		return nil, err
	}
	typ, err := a.string(1)
	if err != nil {
		return nil, err
	}
	status, err := a.optString(2, "True")
	if err != nil {
		return nil, err
	}
	i := conditionIndex(conds, typ)
	return i >= 0 && conds[i].(map[string]any)["status"] == status, nil
}

func k8sSetCondition(env *Env, a *args) (any, error) {
	conds, err := a.conditions(0)
	if err != nil {
		return nil, err
	}
	given, err := a.dict(1)
	if err != nil {
		return nil, err
	}
	typ, ok := given["type"].(string)
	if !ok || typ == "" {
		return nil, a.argErrorf(1, "type: expected non-empty string, got %s", typeName(given["type"]))
	}
	status, _ := given["status"].(string)
	if status != "True" && status != "False" && status != "Unknown" {
		return nil, a.argErrorf(1, "status: expected \"True\", \"False\" or \"Unknown\", got %s", describe(given["status"]))
	}
	cond := deepCopy(given).(map[string]any)
	if ltt, ok := cond["lastTransitionTime"]; ok && ltt != nil {
		s, ok := ltt.(string)
		if _, err := time.Parse(time.RFC3339, s); !ok || err != nil {
			return nil, a.argErrorf(1, "lastTransitionTime: expected RFC 3339 time, got %s", describe(ltt))
		}
	} else {
		cond["lastTransitionTime"] = env.now().UTC().Truncate(time.Second).Format(time.RFC3339)
	}
	out := make([]any, len(conds), len(conds)+1)
	for j, c := range conds {
		out[j] = deepCopy(c)
	}
	i := conditionIndex(conds, typ)
	if i < 0 {
		return a.withConditions(0, append(out, cond)), nil
	}
	old := out[i].(map[string]any)
	if given["lastTransitionTime"] == nil && old["status"] == status && old["lastTransitionTime"] != nil {
		cond["lastTransitionTime"] = old["lastTransitionTime"]
	}
	out[i] = cond
	return a.withConditions(0, out), nil
}

func k8sRemoveCondition(env *Env, a *args) (any, error) {
	conds, err := a.conditions(0)
	if err != nil {
		return nil, err
	}
	typ, err := a.string(1)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(conds))
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			continue
		}
		out = append(out, deepCopy(c))
	}
	return a.withConditions(0, out), nil
}

// describe shows a value in an error: strings quoted, others by type.
func describe(v any) string {
	if s, ok := v.(string); ok {
		return quote(s)
	}
	return typeName(v)
}

// --- owner references

// identity reads apiVersion, kind, metadata.name and metadata.uid of object argument i.
func (a *args) identity(i int) (apiVersion, kind, name, uid string, err error) {
	obj, err := a.dict(i)
	if err != nil {
		return
	}
	meta, _ := obj["metadata"].(map[string]any)
	fields := []struct {
		path string
		v    any
		dst  *string
	}{
		{"apiVersion", obj["apiVersion"], &apiVersion},
		{"kind", obj["kind"], &kind},
		{"metadata.name", meta["name"], &name},
		{"metadata.uid", meta["uid"], &uid},
	}
	for _, f := range fields {
		s, ok := f.v.(string)
		if !ok || s == "" {
			err = a.argErrorf(i, "%s: expected non-empty string, got %s", f.path, describe(f.v))
			return
		}
		*f.dst = s
	}
	return
}

func k8sMakeOwnerRef(env *Env, a *args) (any, error) {
	apiVersion, kind, name, uid, err := a.identity(0)
	if err != nil {
		return nil, err
	}
	controller, err := a.optBool(1, true)
	if err != nil {
		return nil, err
	}
	block, err := a.optBool(2, true)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"apiVersion":         apiVersion,
		"kind":               kind,
		"name":               name,
		"uid":                uid,
		"controller":         controller,
		"blockOwnerDeletion": block,
	}, nil
}

func (a *args) controllerRef(i int) (map[string]any, error) {
	obj, err := a.dict(i)
	if err != nil {
		return nil, err
	}
	meta, _ := obj["metadata"].(map[string]any)
	refs, ok := meta["ownerReferences"].([]any)
	if !ok {
		if meta["ownerReferences"] != nil {
			return nil, a.argErrorf(i, "metadata.ownerReferences: expected list, got %s", typeName(meta["ownerReferences"]))
		}
		return nil, nil
	}
	for _, r := range refs {
		if m, ok := r.(map[string]any); ok && m["controller"] == true {
			return m, nil
		}
	}
	return nil, nil
}

func k8sGetControllerRef(env *Env, a *args) (any, error) {
	ref, err := a.controllerRef(0)
	if err != nil || ref == nil {
		return nil, err
	}
	return deepCopy(ref), nil
}

func k8sIsControlledBy(env *Env, a *args) (any, error) {
	ref, err := a.controllerRef(0)
	if err != nil {
		return nil, err
	}
	_, _, _, uid, err := a.identity(1)
	if err != nil {
		return nil, err
	}
	return ref != nil && ref["uid"] == uid, nil
}

// --- quantities

// maxQuantity bounds the text of a quantity: parsing and adding very long numbers is slow
// (a million digits took longer than any hook's timeout), and real quantities are short.
const maxQuantity = 64

func (a *args) quantity(i int) (resource.Quantity, error) {
	var s string
	switch v := a.value(i).(type) {
	case string:
		s = v
	case int64:
		return *resource.NewQuantity(v, resource.DecimalSI), nil
	case int:
		return *resource.NewQuantity(int64(v), resource.DecimalSI), nil
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return resource.Quantity{}, a.typeError(i, "quantity (string or number)")
	}
	if len(s) > maxQuantity {
		return resource.Quantity{}, a.argErrorf(i, "invalid quantity %s: longer than %d characters", quote(s), maxQuantity)
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return q, a.argErrorf(i, "invalid quantity %s: %v", quote(s), err)
	}
	return q, nil
}

func k8sParseQuantity(env *Env, a *args) (any, error) {
	q, err := a.quantity(0)
	if err != nil {
		return nil, err
	}
	return q.String(), nil
}

func k8sQuantityValue(env *Env, a *args) (any, error) {
	q, err := a.quantity(0)
	if err != nil {
		return nil, err
	}
	return q.AsApproximateFloat64(), nil
}

func k8sCompareQuantities(env *Env, a *args) (any, error) {
	q, err := a.quantity(0)
	if err != nil {
		return nil, err
	}
	r, err := a.quantity(1)
	if err != nil {
		return nil, err
	}
	return int64(q.Cmp(r)), nil
}

func k8sAddQuantities(env *Env, a *args) (any, error) {
	q, err := a.quantity(0)
	if err != nil {
		return nil, err
	}
	r, err := a.quantity(1)
	if err != nil {
		return nil, err
	}
	q.Add(r)
	return q.String(), nil
}

// --- names

func k8sName(env *Env, a *args) (any, error) {
	var parts []string
	switch v := a.value(0).(type) {
	case string:
		parts = []string{v}
	case []any:
		var err error
		if parts, err = a.stringList(0); err != nil {
			return nil, err
		}
	default:
		return nil, a.typeError(0, "string or list of strings")
	}
	maxLen, err := a.optInt(2, int64(validation.DNS1123LabelMaxLength))
	if err != nil {
		return nil, err
	}
	if maxLen < 1 || maxLen > int64(validation.DNS1123SubdomainMaxLength) {
		return nil, a.argErrorf(2, "must be between 1 and %d, got %d", validation.DNS1123SubdomainMaxLength, maxLen)
	}
	subdomain := maxLen > int64(validation.DNS1123LabelMaxLength)
	joined := strings.Join(parts, "-")
	// sanitizeName copies the name three times and, for a subdomain, splits it into labels.
	size := 3 * int64(len(joined))
	if subdomain {
		size += 48 * int64(strings.Count(joined, "."))
	}
	if err := a.reserve(env, size); err != nil {
		return nil, err
	}
	clean := sanitizeName(joined, subdomain)

	suffix := ""
	switch {
	case a.has(1):
		source, ok := a.value(1).(string)
		if !ok {
			b, err := encodeJSON(a.value(1), env.maxBytes(), env.Reserve, "", "")
			if err != nil {
				return nil, a.argErrorf(1, "%w", err)
			}
			source = string(b)
		}
		suffix = "-" + shortHash(source, DefaultShortHashLength)
	case int64(len(clean)) > maxLen:
		suffix = "-" + shortHash(clean, DefaultShortHashLength)
	}
	if clean == "" && suffix == "" {
		return nil, a.argErrorf(0, "no letters or digits to build a name from")
	}
	if int64(len(suffix)) > maxLen {
		return nil, a.argErrorf(2, "%d is too short for a %d-character hash suffix", maxLen, len(suffix))
	}
	base := clean
	if keep := maxLen - int64(len(suffix)); int64(len(base)) > keep {
		base = base[:keep]
	}
	base = strings.TrimRight(base, "-.")
	name := base + suffix
	if base == "" {
		name = strings.TrimPrefix(suffix, "-")
	}
	var problems []string
	if subdomain {
		problems = validation.IsDNS1123Subdomain(name)
	} else {
		problems = validation.IsDNS1123Label(name)
	}
	if len(problems) > 0 {
		return nil, a.errorf("built invalid name %q: %s", name, strings.Join(problems, "; "))
	}
	return name, nil
}

// sanitizeName lowercases s and replaces every character a DNS-1123 label (or, with
// subdomain, a dotted subdomain) cannot hold by "-", then drops separators that would start
// or end the name or one of its dot-separated labels.
func sanitizeName(s string, subdomain bool) string {
	b := []byte(strings.ToLower(s))
	out := b[:0]
	for _, r := range string(b) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			out = append(out, byte(r))
		case r == '.' && subdomain:
			out = append(out, '.')
		default:
			out = append(out, '-')
		}
	}
	if !subdomain {
		return strings.Trim(string(out), "-")
	}
	var labels []string
	for _, l := range strings.Split(string(out), ".") {
		if l = strings.Trim(l, "-"); l != "" {
			labels = append(labels, l)
		}
	}
	return strings.Join(labels, ".")
}

// --- merge

func k8sMerge(env *Env, a *args) (any, error) {
	return mergePatch(a.value(0), a.value(1)), nil
}

// mergePatch applies overlay to base as an RFC 7386 JSON Merge Patch, sharing nothing with
// either.
func mergePatch(base, overlay any) any {
	o, ok := overlay.(map[string]any)
	if !ok {
		return deepCopy(overlay)
	}
	b, _ := base.(map[string]any)
	out := make(map[string]any, len(b)+len(o))
	for k, v := range b {
		if _, overridden := o[k]; !overridden {
			out[k] = deepCopy(v)
		}
	}
	for k, v := range o {
		if v == nil {
			continue
		}
		out[k] = mergePatch(b[k], v)
	}
	return out
}

// jsonEqual compares JSON-shaped values; numbers compare by value whatever their Go type.
func jsonEqual(x, y any) bool {
	switch x := x.(type) {
	case map[string]any:
		y, ok := y.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := y.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case int64, int, float64:
		fx, okx := toFloat(x)
		fy, oky := toFloat(y)
		if !okx || !oky {
			return false
		}
		if ix, ok := asExactInt(x); ok {
			if iy, ok := asExactInt(y); ok {
				return ix == iy
			}
		}
		return fx == fy
	}
	return x == y
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func asExactInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}
