package scripting

import (
	"fmt"
	"strconv"
)

// Helpers for adapters converting a hook's result into the JSON shape.
//
// Converters build paths lazily: a leaf failure returns NewOutputError with an empty path,
// and each enclosing map or list wraps it on the way out with AtKey or AtIndex. Nothing is
// spent on paths unless conversion fails.

// NewOutputError returns an *OutputError at the root path; wrap it with AtKey and AtIndex.
func NewOutputError(lang Language, format string, args ...any) *OutputError {
	return &OutputError{Language: lang, Msg: fmt.Sprintf(format, args...)}
}

// AtKey prefixes the path of an *OutputError with a map key: `name` becomes
// `metadata.name`; keys that are not identifier-like are quoted: `labels["app.k8s.io/x"]`.
// Other errors are returned unchanged.
func AtKey(err error, key string) error {
	e, ok := err.(*OutputError)
	if !ok {
		return err
	}
	var seg string
	if isPlainKey(key) {
		seg = key
	} else {
		seg = "[" + strconv.Quote(key) + "]"
	}
	switch {
	case e.Path == "":
		e.Path = seg
	case e.Path[0] == '[':
		e.Path = seg + e.Path
	default:
		e.Path = seg + "." + e.Path
	}
	return e
}

// AtIndex prefixes the path of an *OutputError with a list index: `metadata` becomes
// `[3].metadata`, and AtKey then makes it `children[3].metadata`. Other errors are returned
// unchanged.
func AtIndex(err error, i int) error {
	e, ok := err.(*OutputError)
	if !ok {
		return err
	}
	seg := "[" + strconv.Itoa(i) + "]"
	if e.Path == "" || e.Path[0] == '[' {
		e.Path = seg + e.Path
	} else {
		e.Path = seg + "." + e.Path
	}
	return e
}

func isPlainKey(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '$') {
			return false
		}
	}
	return true
}

// Approximate sizes, in bytes, of the Go representation of result values, charged to
// Budget.MaxOutputBytes by OutputMeter. They count headers, not allocator rounding.
const (
	OutputScalarBytes    = 16 // an interface holding a bool, int64, float64 or nil
	OutputStringBytes    = 32 // interface and string header, plus len(s)
	OutputListBytes      = 40 // interface and slice header, plus OutputScalarBytes per element
	OutputMapBytes       = 64 // interface and map header, plus per entry OutputMapEntryBytes + len(key)
	OutputMapEntryBytes  = 48
	OutputListEntryBytes = 16
)

// OutputMeter enforces Budget.MaxOutputBytes and Budget.MaxOutputObjects while a result is
// converted, so that an oversized result is refused before it is built rather than after.
// Converters call Add once per value, before allocating its Go representation. An
// OutputMeter is used by one conversion on one goroutine.
type OutputMeter struct {
	lang       Language
	maxBytes   int64
	maxObjects int64
	bytes      int64
	objects    int64
}

// NewOutputMeter returns a meter enforcing b's output caps; zero caps take DefaultBudget's.
func NewOutputMeter(lang Language, b Budget) OutputMeter {
	b = b.WithDefaults(DefaultBudget)
	return OutputMeter{lang: lang, maxBytes: b.MaxOutputBytes, maxObjects: b.MaxOutputObjects}
}

// Add charges one value of approximately bytes bytes. It returns a *BudgetError for
// BudgetOutput once either cap is passed.
func (m *OutputMeter) Add(bytes int64) error {
	m.objects++
	m.bytes += bytes
	if m.objects > m.maxObjects || m.bytes > m.maxBytes {
		return m.exceeded()
	}
	return nil
}

// Used returns the values and bytes charged so far.
func (m *OutputMeter) Used() (objects, bytes int64) { return m.objects, m.bytes }

func (m *OutputMeter) exceeded() error {
	if m.objects > m.maxObjects {
		return &BudgetError{Language: m.lang, Budget: BudgetOutput, Limit: m.maxObjects, Used: m.objects, Unit: "objects"}
	}
	return &BudgetError{Language: m.lang, Budget: BudgetOutput, Limit: m.maxBytes, Used: m.bytes, Unit: "bytes"}
}

// MaxOutputDepth is how deeply maps and lists may nest in a result. Deeper values are an
// OutputError: no Kubernetes object nests this deep, and it stops converters on cyclic
// structures without tracking every container they have visited.
const MaxOutputDepth = 256
