package scripting

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Library is one revision of a hook library: named modules, each in one language. Hooks
// load its modules as "lib:NAME/MODULE" (Starlark adds ".star" to the module name), or pin
// the revision: "lib:NAME@REVISION/MODULE". Only the current revision exists: a pin of any
// other is an error.
type Library struct {
	Name     string
	Revision string // LibraryRevision of Modules
	Modules  map[string]LibraryModule
}

// LibraryModule is the source of one module of a Library.
type LibraryModule struct {
	Language Language
	Source   string
}

// Libraries are the libraries one compile may load from: those of the controller's scope
// (the cluster, or the controller's namespace).
type Libraries interface {
	// Library returns the current revision of the library name, if there is one.
	Library(name string) (*Library, bool)
	// Scope says where libraries are looked up, for errors: "HookLibrary",
	// "NamespacedHookLibrary in namespace team-a".
	Scope() string
}

// LibraryHinter is implemented by Libraries that can say how to supply a library they do
// not hold (the offline commands: "give it with --library FILE"). The hint follows the
// engine's own "library NAME not found" message, in parentheses.
type LibraryHinter interface {
	MissingHint(name string) string
}

// LibraryRevision is a short content hash of modules: equal modules, equal revision.
func LibraryRevision(modules map[string]LibraryModule) string {
	return modulesDigest(modules)[:12]
}

// modulesDigest is the content hash of modules, in hex: the revision is its prefix, and the
// compile cache keys a library by its whole.
func modulesDigest(modules map[string]LibraryModule) string {
	names := make([]string, 0, len(modules))
	for n := range modules {
		names = append(names, n)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		m := modules[n]
		fmt.Fprintf(h, "%d:%s%d:%s%d:%s", len(n), n, len(m.Language), m.Language, len(m.Source), m.Source)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// LibraryPrefix starts every library reference.
const LibraryPrefix = "lib:"

// LibraryRef is a parsed library reference, lib:LIBRARY[@PIN]/MODULE.
type LibraryRef struct {
	Library string
	Pin     string // "" follows the current revision
	Module  string // as written, with ".star" for Starlark
}

func (r LibraryRef) String() string {
	if r.Pin != "" {
		return LibraryPrefix + r.Library + "@" + r.Pin + "/" + r.Module
	}
	return LibraryPrefix + r.Library + "/" + r.Module
}

var refPattern = regexp.MustCompile(`^lib:([a-z0-9]([-a-z0-9.]*[a-z0-9])?)(@([0-9a-f]+))?/([A-Za-z_][A-Za-z0-9_.-]*)$`)

// ParseLibraryRef parses s. It reports whether s is a library reference at all (starts with
// "lib:") and, if it is, whether it is well formed.
func ParseLibraryRef(s string) (LibraryRef, bool, error) {
	if !strings.HasPrefix(s, LibraryPrefix) {
		return LibraryRef{}, false, nil
	}
	m := refPattern.FindStringSubmatch(s)
	if m == nil {
		return LibraryRef{}, true, fmt.Errorf("%q is not a library reference: want lib:LIBRARY/MODULE or lib:LIBRARY@REVISION/MODULE", s)
	}
	return LibraryRef{Library: m[1], Pin: m[4], Module: m[5]}, true, nil
}

var namePattern = regexp.MustCompile(`lib:([a-z0-9]([-a-z0-9.]*[a-z0-9])?)[@/]`)

// LibraryNames lists, sorted, the libraries source may load: every name in a "lib:NAME/" or
// "lib:NAME@" anywhere in the text. It reads the text, not the program, so a name in a
// comment counts too; the engine uses it to know which controllers a library edit concerns,
// where one too many costs a recompile and nothing else.
func LibraryNames(source string) []string {
	if !strings.Contains(source, LibraryPrefix) {
		return nil
	}
	var names []string
	for _, m := range namePattern.FindAllStringSubmatch(source, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return names
}

// LibraryError is a library reference that cannot be resolved. It is reported within the
// compile error of the hook or module that loads Ref, which names Ref already.
type LibraryError struct {
	Ref LibraryRef
	Msg string
}

func (e *LibraryError) Error() string { return e.Msg }

// Linker resolves the library references of one compile for a LinkingCompiler.
type Linker interface {
	// Module returns the compiled module ref names, as the adapter's CompileModule made it;
	// ref.Module is the module's name (without ".star"). Each module is compiled once per
	// library revision and shared. from is the library whose module is loading, "" for a
	// hook: a library module may load only modules of its own library.
	Module(from string, ref LibraryRef) (any, error)
}

// LinkingCompiler is a Compiler whose sources may load library modules.
type LinkingCompiler interface {
	Compiler
	// CompileLinked is Compile with library references resolved through l.
	CompileLinked(name, source string, l Linker) (Program, error)
	// CompileModule compiles one library module named name (lib:LIBRARY/MODULE); its own
	// library references are resolved through l. The result is immutable and shared by
	// every Program that loads the module.
	CompileModule(name, source string, l Linker) (any, error)
}

// NewLibrary returns the library name with modules, its revision computed.
func NewLibrary(name string, modules map[string]LibraryModule) *Library {
	return &Library{Name: name, Revision: LibraryRevision(modules), Modules: modules}
}

// LibrarySet is a fixed set of libraries, for offline commands and tests.
type LibrarySet struct {
	// ScopeName is what Scope returns.
	ScopeName string
	ByName    map[string]*Library
}

// Library returns the library name.
func (s *LibrarySet) Library(name string) (*Library, bool) {
	l, ok := s.ByName[name]
	return l, ok
}

// Scope returns s.ScopeName.
func (s *LibrarySet) Scope() string { return s.ScopeName }
