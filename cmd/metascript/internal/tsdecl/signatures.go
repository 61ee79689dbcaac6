package tsdecl

// tsFunc is the TypeScript side of one stdlib function: what the registry and the reference
// page cannot say. Parameter names and which are optional come from stdlib.Params.
type tsFunc struct {
	// generic, when set, is the function's type parameter list: "<T>".
	generic string
	// params are the parameters' types, in order.
	params []string
	result string
}

// Types used by several signatures, spelled once. A null argument, and so undefined, which
// the runtime passes as null, is a value some functions take.
const (
	jsonValue   = "any"
	labelMap    = "{ [key: string]: string } | null | undefined"
	selector    = "LabelSelector | string | null | undefined"
	quantity    = "string | number"
	conditioned = "{ status?: { conditions?: Condition[] | null } | null } | Condition[]"
	timeString  = "string"
	duration    = "number | string"
)

// stdlibTypes are the TypeScript signatures of every stdlib function, by qualified name. A
// test requires one entry per registry function, no more.
var stdlibTypes = map[string]tsFunc{
	"json.encode": {params: []string{jsonValue}, result: "string"},
	"json.decode": {params: []string{"string"}, result: jsonValue},
	"json.indent": {params: []string{jsonValue, "string", "string"}, result: "string"},

	"yaml.encode": {params: []string{jsonValue}, result: "string"},
	"yaml.decode": {params: []string{"string"}, result: jsonValue},

	"base64.encode":         {params: []string{"string"}, result: "string"},
	"base64.decode":         {params: []string{"string"}, result: "string"},
	"base64.url_encode":     {params: []string{"string"}, result: "string"},
	"base64.url_decode":     {params: []string{"string"}, result: "string"},
	"base64.raw_url_encode": {params: []string{"string"}, result: "string"},
	"base64.raw_url_decode": {params: []string{"string"}, result: "string"},

	"hash.sha256": {params: []string{"string"}, result: "string"},
	"hash.short":  {params: []string{"string", "number"}, result: "string"},

	"time.now":             {result: timeString},
	"time.parse":           {params: []string{"string", "string"}, result: timeString},
	"time.format":          {params: []string{timeString, "string"}, result: "string"},
	"time.unix":            {params: []string{timeString}, result: "number"},
	"time.from_unix":       {params: []string{"number"}, result: timeString},
	"time.parse_duration":  {params: []string{"string"}, result: "number"},
	"time.format_duration": {params: []string{"number"}, result: "string"},
	"time.add":             {params: []string{timeString, duration}, result: timeString},
	"time.sub":             {params: []string{timeString, timeString}, result: "number"},
	"time.since":           {params: []string{timeString}, result: "number"},
	"time.compare":         {params: []string{timeString, timeString}, result: "-1 | 0 | 1"},
	"time.before":          {params: []string{timeString, timeString}, result: "boolean"},
	"time.after":           {params: []string{timeString, timeString}, result: "boolean"},

	"strings.has_prefix":   {params: []string{"string", "string"}, result: "boolean"},
	"strings.has_suffix":   {params: []string{"string", "string"}, result: "boolean"},
	"strings.contains":     {params: []string{"string", "string"}, result: "boolean"},
	"strings.contains_any": {params: []string{"string", "string"}, result: "boolean"},
	"strings.count":        {params: []string{"string", "string"}, result: "number"},
	"strings.equal_fold":   {params: []string{"string", "string"}, result: "boolean"},
	"strings.lower":        {params: []string{"string"}, result: "string"},
	"strings.upper":        {params: []string{"string"}, result: "string"},
	"strings.trim_space":   {params: []string{"string"}, result: "string"},
	"strings.trim":         {params: []string{"string", "string"}, result: "string"},
	"strings.trim_left":    {params: []string{"string", "string"}, result: "string"},
	"strings.trim_right":   {params: []string{"string", "string"}, result: "string"},
	"strings.trim_prefix":  {params: []string{"string", "string"}, result: "string"},
	"strings.trim_suffix":  {params: []string{"string", "string"}, result: "string"},
	"strings.split":        {params: []string{"string", "string", "number"}, result: "string[]"},
	"strings.fields":       {params: []string{"string"}, result: "string[]"},
	"strings.cut":          {params: []string{"string", "string"}, result: "[before: string, after: string, found: boolean]"},
	"strings.join":         {params: []string{"string[]", "string"}, result: "string"},
	"strings.replace":      {params: []string{"string", "string", "string", "number"}, result: "string"},
	"strings.repeat":       {params: []string{"string", "number"}, result: "string"},
	"strings.length":       {params: []string{"string"}, result: "number"},

	"re.match":         {params: []string{"string", "string"}, result: "boolean"},
	"re.find":          {params: []string{"string", "string"}, result: "string | null"},
	"re.find_all":      {params: []string{"string", "string", "number"}, result: "string[]"},
	"re.find_submatch": {params: []string{"string", "string"}, result: "(string | null)[] | null"},
	"re.replace":       {params: []string{"string", "string", "string"}, result: "string"},
	"re.split":         {params: []string{"string", "string", "number"}, result: "string[]"},
	"re.quote_meta":    {params: []string{"string"}, result: "string"},

	"k8s.match_selector":     {params: []string{selector, labelMap}, result: "boolean"},
	"k8s.get_condition":      {params: []string{conditioned, "string"}, result: "Condition | null"},
	"k8s.find_condition":     {params: []string{conditioned, "{ [field: string]: any }"}, result: "Condition | null"},
	"k8s.has_condition":      {params: []string{conditioned, "string", "string"}, result: "boolean"},
	"k8s.set_condition":      {generic: "<T extends " + conditioned + ">", params: []string{"T", "Condition"}, result: "T"},
	"k8s.remove_condition":   {generic: "<T extends " + conditioned + ">", params: []string{"T", "string"}, result: "T"},
	"k8s.make_owner_ref":     {params: []string{"KubernetesObject", "boolean", "boolean"}, result: "OwnerReference"},
	"k8s.get_controller_ref": {params: []string{"KubernetesObject"}, result: "OwnerReference | null"},
	"k8s.is_controlled_by":   {params: []string{"KubernetesObject", "KubernetesObject"}, result: "boolean"},
	"k8s.parse_quantity":     {params: []string{quantity}, result: "string"},
	"k8s.quantity_value":     {params: []string{quantity}, result: "number"},
	"k8s.compare_quantities": {params: []string{quantity, quantity}, result: "-1 | 0 | 1"},
	"k8s.add_quantities":     {params: []string{quantity, quantity}, result: "string"},
	"k8s.name":               {params: []string{"string | string[]", jsonValue, "number"}, result: "string"},
	"k8s.merge":              {params: []string{jsonValue, jsonValue}, result: jsonValue},

	"log.debug": {params: []string{"string", "{ [field: string]: any }"}, result: "null"},
	"log.info":  {params: []string{"string", "{ [field: string]: any }"}, result: "null"},
	"log.warn":  {params: []string{"string", "{ [field: string]: any }"}, result: "null"},
	"log.error": {params: []string{"string", "{ [field: string]: any }"}, result: "null"},
}
