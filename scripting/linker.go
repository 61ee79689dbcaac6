package scripting

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CompileLinked is Compile for a source that may load modules of libs (nil: none). The
// compiled Program is cached under its source and the revisions of the libraries it names
// (LibraryNames), so an edit of one of those libraries compiles the source again and an
// edit of any other does not. A reference that cannot be resolved, and a module that does
// not compile, fail the compile with a *CompileError naming the library and module.
//
// Each library's modules of lang are compiled once per revision, together, and shared by
// every Program that loads them (see LinkingCompiler for what the adapters share).
func (r *Runtime) CompileLinked(lang Language, name, source string, libs Libraries) (Program, error) {
	c, ok := r.compilers[lang]
	if !ok {
		return nil, fmt.Errorf("scripting: %w %q", ErrUnknownLanguage, lang)
	}
	names := LibraryNames(source)
	lc, linking := c.(LinkingCompiler)
	if len(names) == 0 || !linking {
		return r.Compile(lang, name, source)
	}
	var keyText strings.Builder
	keyText.WriteString(source)
	scope := "none"
	if libs != nil {
		scope = libs.Scope()
	}
	fmt.Fprintf(&keyText, "\x00scope %s", scope)
	for _, n := range names {
		rev := "-"
		if libs != nil {
			if l, ok := libs.Library(n); ok {
				rev = contentKey(l)
			}
		}
		fmt.Fprintf(&keyText, "\x00lib %s %s", n, rev)
	}
	key := newCacheKey(lang, c.Version(), keyText.String())
	e := r.cache.get(key, func() (Program, string, error) {
		l := &hookLinker{rt: r, lang: lang, compiler: lc, libs: libs}
		p, err := recovered(lang, name, func() (Program, error) { return lc.CompileLinked(name, source, l) })
		return p, name, err
	})
	return r.finish(e, name)
}

// CompileLibrary compiles every module of lib (once per revision, as CompileLinked does) and
// returns the errors of the modules that do not compile, joined, each a *CompileError
// located in its module.
func (r *Runtime) CompileLibrary(lib *Library) error {
	var errs []error
	for _, lang := range []Language{Starlark, JavaScript} {
		has := false
		for _, m := range lib.Modules {
			has = has || m.Language == lang
		}
		if !has {
			continue
		}
		c, ok := r.compilers[lang].(LinkingCompiler)
		if !ok {
			errs = append(errs, fmt.Errorf("library %s: no compiler offers %s library modules", lib.Name, lang))
			continue
		}
		b := r.libraryBuild(lang, c, lib)
		for _, n := range b.order {
			if err := b.errs[n]; err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// ModulesCompiled counts the library modules this Runtime compiled, for tests and metrics.
func (r *Runtime) ModulesCompiled() uint64 { return r.modulesCompiled.Load() }

// contentKey identifies a library by its name and full content (the revision is a short
// form of the content's hash).
func contentKey(l *Library) string { return l.Name + "\x00" + modulesDigest(l.Modules) }

func sortedModules(l *Library) []string {
	names := make([]string, 0, len(l.Modules))
	for n := range l.Modules {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// finish is what Compile and CompileLinked return for a finished cache entry.
func (r *Runtime) finish(e *cacheEntry, name string) (Program, error) {
	if e.err != nil {
		// Rename the position of the compiled source only: an error may be located in a
		// library module instead.
		var ce *CompileError
		if errors.As(e.err, &ce) && ce.File == e.name && ce.File != name {
			cp := *ce
			cp.File = name
			return nil, &cp
		}
		return nil, e.err
	}
	return &budgetedProgram{Program: e.prog, rt: r, name: name, compiledName: e.name, entry: e}, nil
}

// recovered runs compile, turning a panic into a compile error instead of a crash.
func recovered(lang Language, name string, compile func() (Program, error)) (p Program, err error) {
	defer func() {
		if v := recover(); v != nil {
			p, err = nil, &CompileError{Language: lang, File: name, Msg: fmt.Sprintf("compiler panic: %v", v)}
		}
	}()
	return compile()
}

// hookLinker resolves the library references of a hook.
type hookLinker struct {
	rt       *Runtime
	lang     Language
	compiler LinkingCompiler
	libs     Libraries
}

func (l *hookLinker) Module(from string, ref LibraryRef) (any, error) {
	if from != "" {
		return nil, &LibraryError{Ref: ref, Msg: "internal error: a hook linker asked for a library module's load"}
	}
	var lib *Library
	ok := false
	if l.libs != nil {
		lib, ok = l.libs.Library(ref.Library)
	}
	if !ok {
		scope := "no libraries are offered here"
		if l.libs != nil {
			scope = "no " + l.libs.Scope() + " of that name"
			if h, ok := l.libs.(LibraryHinter); ok {
				if hint := h.MissingHint(ref.Library); hint != "" {
					scope += " (" + hint + ")"
				}
			}
		}
		return nil, &LibraryError{Ref: ref, Msg: "library " + ref.Library + " not found: " + scope}
	}
	if err := checkPin(lib, ref); err != nil {
		return nil, err
	}
	module, err := moduleName(l.lang, lib, ref)
	if err != nil {
		return nil, err
	}
	b := l.rt.libraryBuild(l.lang, l.compiler, lib)
	if err := b.errs[module]; err != nil {
		return nil, err // located in the module
	}
	return b.modules[module], nil
}

// checkPin refuses a pin of a revision other than lib's current one: only that one is kept.
func checkPin(lib *Library, ref LibraryRef) error {
	if ref.Pin != "" && ref.Pin != lib.Revision {
		return &LibraryError{Ref: ref, Msg: fmt.Sprintf("pinned revision %s is not the library's current revision %s (only the current revision is kept)",
			ref.Pin, lib.Revision)}
	}
	return nil
}

// moduleName is the module of lib that ref names in lang: a Starlark reference ends in
// ".star", the module's name does not.
func moduleName(lang Language, lib *Library, ref LibraryRef) (string, error) {
	name := ref.Module
	if lang == Starlark {
		var ok bool
		if name, ok = strings.CutSuffix(name, ".star"); !ok {
			return "", &LibraryError{Ref: ref, Msg: "a Starlark module is loaded as lib:LIBRARY/MODULE.star"}
		}
	}
	m, ok := lib.Modules[name]
	if !ok {
		return "", &LibraryError{Ref: ref, Msg: fmt.Sprintf("library %s has no module %q (modules: %s)",
			lib.Name, name, strings.Join(sortedModules(lib), ", "))}
	}
	if m.Language != lang {
		return "", &LibraryError{Ref: ref, Msg: fmt.Sprintf("module %s is %s, not %s", name, m.Language, lang)}
	}
	return name, nil
}

// libraryBuild is the compiled modules of one language of one library revision. It is made
// in one piece, by one goroutine: loads between modules of the library are resolved while it
// is made, so a cycle is found on the stack of modules being compiled rather than waited on.
type libraryBuild struct {
	rt       *Runtime
	lang     Language
	compiler LinkingCompiler
	lib      *Library
	order    []string // the modules of lang, sorted
	modules  map[string]any
	errs     map[string]error
	stack    []string // modules being compiled, outermost first
}

// libraryBuild returns the build of lib's modules of lang, made once per content.
func (r *Runtime) libraryBuild(lang Language, c LinkingCompiler, lib *Library) *libraryBuild {
	key := newCacheKey(lang, c.Version(), "\x00library\x00"+contentKey(lib))
	e := r.cache.getEntry(key, func(e *cacheEntry) {
		b := &libraryBuild{rt: r, lang: lang, compiler: c, lib: lib, modules: map[string]any{}, errs: map[string]error{}}
		for _, n := range sortedModules(lib) {
			if lib.Modules[n].Language == lang {
				b.order = append(b.order, n)
			}
		}
		for _, n := range b.order {
			b.compile(n)
		}
		e.lib = b
	})
	return e.lib
}

// file names a module in positions and stack frames.
func (b *libraryBuild) file(module string) string {
	f := LibraryPrefix + b.lib.Name + "/" + module
	if b.lang == Starlark {
		f += ".star"
	}
	return f
}

// compile compiles module unless it was, and returns its error.
func (b *libraryBuild) compile(module string) error {
	if _, done := b.modules[module]; done {
		return nil
	}
	if err, done := b.errs[module]; done {
		return err
	}
	b.stack = append(b.stack, module)
	defer func() { b.stack = b.stack[:len(b.stack)-1] }()
	file := b.file(module)
	b.rt.modulesCompiled.Add(1)
	var m any
	_, err := recovered(b.lang, file, func() (Program, error) {
		var err error
		m, err = b.compiler.CompileModule(file, b.lib.Modules[module].Source, b)
		return nil, err
	})
	if err != nil {
		b.errs[module] = err
		return err
	}
	b.modules[module] = m
	return nil
}

// Module resolves a load by one of the library's modules: only modules of the same library.
func (b *libraryBuild) Module(from string, ref LibraryRef) (any, error) {
	if ref.Library != b.lib.Name {
		return nil, &LibraryError{Ref: ref, Msg: fmt.Sprintf("a module of library %s may load only modules of %s", b.lib.Name, b.lib.Name)}
	}
	if err := checkPin(b.lib, ref); err != nil {
		return nil, err
	}
	module, err := moduleName(b.lang, b.lib, ref)
	if err != nil {
		return nil, err
	}
	if i := slices.Index(b.stack, module); i >= 0 {
		cycle := make([]string, 0, len(b.stack)-i+1)
		for _, m := range b.stack[i:] {
			cycle = append(cycle, b.file(m))
		}
		cycle = append(cycle, b.file(module))
		return nil, &LibraryError{Ref: ref, Msg: "load cycle: " + strings.Join(cycle, " -> ")}
	}
	if err := b.compile(module); err != nil {
		return nil, err
	}
	return b.modules[module], nil
}

var _ Linker = (*libraryBuild)(nil)
