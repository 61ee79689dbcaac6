// Package crds holds the CustomResourceDefinitions of this directory, embedded at build time,
// so that commands can check resources against the very schemas the API server is given.
// The YAML files stay the single source: make generate writes them, this package only reads.
package crds

import "embed"

// FS holds the CRD files, metascript.dev_PLURAL.yaml, one CustomResourceDefinition each.
//
//go:embed metascript.dev_*.yaml
var FS embed.FS
