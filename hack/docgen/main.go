// Command docgen writes the field tables of the reference pages (docs/reference/*.md) from
// the Go types of the controller resources (apis/v1alpha1): for each field its JSON name,
// type, whether the API server requires it, its default and its doc comment. Only the
// regions between <!-- fields:begin TYPE --> and <!-- fields:end --> are written; the prose
// around them is the page's own.
//
//	go run ./hack/docgen          rewrite the pages (make docs)
//	go run ./hack/docgen -check   exit 1, naming them, when pages are out of date
//
// It also fails when a struct type the controller resources use has no table on any page.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

// roots are the types whose fields a reader of the controller resources meets.
var roots = []string{"CompositeControllerSpec", "DecoratorControllerSpec", "MapControllerSpec", "HookLibrarySpec", "HookLibraryStatus",
	"ControllerStatus", "ControllerRevision"}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("docgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "report out-of-date pages instead of rewriting them")
	apiDir := fs.String("apis", "apis/v1alpha1", "the API package's directory")
	docDir := fs.String("docs", "docs/reference", "the reference pages' directory")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "docgen: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	ref, err := loadReference(*apiDir, *docDir)
	if err != nil {
		fmt.Fprintln(stderr, "docgen:", err)
		return 1
	}
	status := 0
	if missing := ref.missing(roots); len(missing) > 0 {
		fmt.Fprintf(stderr, "docgen: no table of %v: add a region for each to a page of %s\n", missing, *docDir)
		status = 1
	}
	stale, err := ref.stale()
	if err != nil {
		fmt.Fprintln(stderr, "docgen:", err)
		return 1
	}
	paths := make([]string, 0, len(stale))
	for p := range stale {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if *check {
			fmt.Fprintf(stderr, "docgen: %s is out of date with %s: run make docs\n", p, *apiDir)
			status = 1
			continue
		}
		if err := os.WriteFile(p, []byte(stale[p]), 0o644); err != nil {
			fmt.Fprintln(stderr, "docgen:", err)
			return 1
		}
		fmt.Fprintln(stdout, "wrote", p)
	}
	return status
}
