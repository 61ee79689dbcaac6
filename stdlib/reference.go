package stdlib

import _ "embed"

// Reference is REFERENCE.md, the page for hook authors generated from this package's doc
// comments: what `metascript types` carries into the declarations of each module.
//
//go:embed REFERENCE.md
var Reference string
