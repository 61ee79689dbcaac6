package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
)

// Read decodes obj, a controller resource of kind in JSON shape, strictly: a field the kind's
// type does not have is an error naming its path (spec.hooks.sync.sourc), rather than
// dropped as the API server's pruning would drop it.
func Read(kind *reconcile.Descriptor, obj map[string]any) (*reconcile.Declared, error) {
	return kind.Read(func(into any) error { return DecodeStrict(obj, into) })
}

// DecodeStrict decodes obj into v, refusing fields v does not have; the error names an
// unknown field by its path when it can.
func DecodeStrict(obj map[string]any, v any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(locateUnknownField(obj, strings.TrimPrefix(err.Error(), "json: ")))
	}
	return nil
}

// locateUnknownField turns encoding/json's `unknown field "x"` into the field's path in obj
// when exactly one key of obj is called x; otherwise msg is returned as is.
func locateUnknownField(obj map[string]any, msg string) string {
	name, ok := strings.CutPrefix(msg, "unknown field ")
	if !ok {
		return msg
	}
	name, err := strconv.Unquote(name)
	if err != nil {
		return msg
	}
	var paths []string
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				p := k
				if at != "" {
					p = at + "." + k
				}
				if k == name {
					paths = append(paths, p)
				}
				walk(p, e)
			}
		case []any:
			for i, e := range t {
				walk(fmt.Sprintf("%s[%d]", at, i), e)
			}
		}
	}
	walk("", obj)
	if len(paths) != 1 {
		return msg
	}
	return "unknown field " + paths[0]
}

// configure resolves the controller's resources and configures it as the manager does,
// with nothing to run it: its error is the first the engine would report (InvalidSpec). A
// resource not served yet is no error: the engine waits for it, and so the kind's own rules
// cannot be checked yet either. Nor is a discovery that fails: the controller is not at
// fault, and the engine checks again when it builds it.
func configure(kind *reconcile.Descriptor, decl *reconcile.Declared, obj map[string]any, opts Options) error {
	resolved := make([]resources.Resource, len(decl.Resources))
	for i, ref := range decl.Resources {
		res, err := opts.Resolver.Resolve(ref.Rule.APIVersion, ref.Rule.Resource)
		var nf *resources.NotFoundError
		var status apierrors.APIStatus
		var unreachable *url.Error
		if errors.As(err, &nf) || errors.As(err, &status) || errors.As(err, &unreachable) {
			// Not served yet, or discovery failed: nothing to hold against the controller.
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", ref.Field, err)
		}
		resolved[i] = res
	}
	// Hooks are built and checked already; Configure needs them present, not runnable.
	built := map[string]hooks.Invoker{}
	for name := range decl.Hooks {
		built[name] = unbuilt{}
	}
	_, err := kind.Configure(&reconcile.Built{Declared: decl, Descriptor: kind, Object: obj, Resources: resolved, Hooks: built},
		reconcile.Env{Resolver: opts.Resolver, RevisionNamespace: reconcile.DefaultRevisionNamespace})
	return err
}

// splitField splits an error worded `spec.FIELD: message` into FIELD (relative to spec) and
// the message; an error without that prefix has no field.
func splitField(err error) (string, error) {
	field, rest, ok := strings.Cut(err.Error(), ": ")
	if !ok || !strings.HasPrefix(field, "spec.") || strings.ContainsAny(field, " ") {
		return "", err
	}
	return strings.TrimPrefix(field, "spec."), errors.New(rest)
}

// unbuilt stands for a hook that Configure needs to find but that is never called.
type unbuilt struct{}

func (unbuilt) Invoke(context.Context, map[string]any, *slog.Logger) (map[string]any, error) {
	return nil, errors.New("admission checks never call hooks")
}

func (unbuilt) Form() string { return "unbuilt" }
