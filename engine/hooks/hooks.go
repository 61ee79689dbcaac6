// Package hooks puts one interface, Invoker, in front of the two ways a hook runs: an inline
// Starlark or JavaScript program through the scripting runtime, or a webhook over HTTP. Both
// take and return the webhook protocol's JSON shape, so a hook moves between forms unchanged.
package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/fairshare"
	"metascript.dev/metascript/scripting"
)

// Invoker calls one hook. Implementations are safe for concurrent use.
type Invoker interface {
	// Invoke calls the hook with req (never modified) and returns its JSON-shaped response
	// object. log receives the hook's own log lines. Errors are the scripting package's typed
	// errors, *WebhookError, *RetryAfterError when a webhook asked to be called again
	// later, or *ResponseError when the result is not an object (or breaks a webhook's
	// strict responseUnMarshallMode).
	Invoke(ctx context.Context, req map[string]any, log *slog.Logger) (map[string]any, error)
	// Form is "starlark", "javascript" or "webhook" (a metric label).
	Form() string
}

// Compiler compiles hook source; *scripting.Runtime is one.
type Compiler interface {
	Compile(lang scripting.Language, name, source string) (scripting.Program, error)
}

// SourceResolver reads a source kept in a ConfigMap. A nil resolver refuses configMapRef.
type SourceResolver interface {
	ConfigMapKey(ctx context.Context, ref v1alpha1.ConfigMapKeyRef) (string, error)
}

// ResponseError reports a hook result that is not a JSON object.
type ResponseError struct{ Msg string }

func (e *ResponseError) Error() string { return "hook response: " + e.Msg }

// Spec is what Build needs to know about one hook of one controller.
type Spec struct {
	// Controller names the controller in compile positions, e.g. "compositecontroller/my-cc".
	Controller string
	// Hook is the hook's name; it is also the default function name.
	Hook string
	// Def is the hook spec from the controller resource.
	Def *v1alpha1.Hook
	// Shared is the controller's shared script, if any.
	Shared *v1alpha1.SharedScript
	// ResponseFields are the top-level fields the controller kind accepts in this hook's
	// response. A webhook in strict responseUnMarshallMode refuses others; in loose mode it
	// drops them before the kind validates the rest. Nil leaves field names to the kind.
	ResponseFields []string
	// EndpointConfigs are the controller's spec.endpointConfigs, for webhooks.
	EndpointConfigs []v1alpha1.EndpointConfig
	// Libraries are the hook libraries inline sources may load, when the Compiler links
	// (LinkingCompiler); nil offers none.
	Libraries scripting.Libraries
	// WebhookCeiling, when positive, caps a webhook's timeout (Capped reports it).
	WebhookCeiling time.Duration
	// MaxAnswer and AnswerMemory are a webhook's Webhook.MaxResponse and Webhook.Memory.
	MaxAnswer    int64
	AnswerMemory *fairshare.Bytes
	// Sources, when set, is the bound of the controller's sources, shared by the Specs of all
	// its hooks: a source that passes it is a *SourceTooLargeError, before it is compiled.
	Sources *SourceMeter
	// Tenant, when set, builds a webhook as a tenant controller's: it connects only where
	// the policy allows, follows no redirect, and its errors carry the status code and a
	// short reason, never anything of the response body. Nil: a webhook the platform trusts.
	Tenant *Egress
}

// LinkingCompiler is a Compiler that resolves library loads; *scripting.Runtime is one.
type LinkingCompiler interface {
	Compiler
	CompileLinked(lang scripting.Language, name, source string, libs scripting.Libraries) (scripting.Program, error)
}

// Build turns a hook spec into an Invoker, compiling inline sources (cached by the
// compiler) and reading what a webhook's connection settings refer to (through r, which must
// also be a SecretReader for Secrets). A compile error is returned as
// *scripting.CompileError, unusable connection settings as *ConfigError, a spec that names
// no usable source as a plain error. Build never calls the hook.
func Build(ctx context.Context, s Spec, c Compiler, r SourceResolver) (Invoker, error) {
	d := s.Def
	if d == nil {
		return nil, errors.New("no hook spec")
	}
	switch {
	case d.Webhook != nil:
		return buildWebhook(ctx, s, r)
	case d.Starlark != nil:
		return buildScript(ctx, s, scripting.Starlark, d.Starlark, sharedOf(s.Shared, scripting.Starlark), c, r)
	case d.JavaScript != nil:
		return buildScript(ctx, s, scripting.JavaScript, d.JavaScript, sharedOf(s.Shared, scripting.JavaScript), c, r)
	}
	return nil, fmt.Errorf("hook %s: exactly one of starlark, javascript or webhook must be set", s.Hook)
}

func sharedOf(sh *v1alpha1.SharedScript, lang scripting.Language) *v1alpha1.ScriptSource {
	if sh == nil {
		return nil
	}
	if lang == scripting.Starlark {
		return sh.Starlark
	}
	return sh.JavaScript
}

func buildScript(ctx context.Context, s Spec, lang scripting.Language, in *v1alpha1.InlineScript,
	shared *v1alpha1.ScriptSource, c Compiler, r SourceResolver) (Invoker, error) {
	name := s.Controller + "/hooks/" + s.Hook
	src := v1alpha1.ScriptSource{Source: in.Source, ConfigMapRef: in.ConfigMapRef}
	if src.Source == "" && src.ConfigMapRef == nil {
		if shared == nil {
			return nil, fmt.Errorf("hook %s: %s has no source and the controller has no shared %s script", s.Hook, lang, lang)
		}
		src, name = *shared, s.Controller+"/script"
	}
	code, err := resolve(ctx, src, r)
	if err != nil {
		return nil, fmt.Errorf("hook %s: %w", s.Hook, err)
	}
	if err := s.Sources.charge(name, len(code)); err != nil {
		return nil, err
	}
	var prog scripting.Program
	if lc, ok := c.(LinkingCompiler); ok && s.Libraries != nil {
		prog, err = lc.CompileLinked(lang, name, code, s.Libraries)
	} else {
		prog, err = c.Compile(lang, name, code)
	}
	if err != nil {
		return nil, err
	}
	fn := in.Function
	if fn == "" {
		fn = s.Hook
	}
	if !slices.Contains(prog.Functions(), fn) {
		return nil, &scripting.CompileError{Language: lang, File: name, Line: 1, Column: 1,
			Msg: fmt.Sprintf("no top-level function %q (defined: %v)", fn, prog.Functions())}
	}
	return &Script{Program: prog, Function: fn, Budget: BudgetOf(s.Def.Budget)}, nil
}

func resolve(ctx context.Context, src v1alpha1.ScriptSource, r SourceResolver) (string, error) {
	if src.ConfigMapRef == nil {
		return src.Source, nil
	}
	if r == nil {
		return "", fmt.Errorf("source in ConfigMap %s/%s key %s cannot be read here",
			src.ConfigMapRef.Namespace, src.ConfigMapRef.Name, src.ConfigMapRef.Key)
	}
	return r.ConfigMapKey(ctx, *src.ConfigMapRef)
}

// BudgetOf converts an API budget to the runtime's; nil fields stay zero (the runtime's
// defaults apply, capped by its ceilings).
func BudgetOf(b *v1alpha1.Budget) scripting.Budget {
	var out scripting.Budget
	if b == nil {
		return out
	}
	if b.Timeout != nil {
		out.Timeout = b.Timeout.Duration
	}
	if b.MaxSteps != nil && *b.MaxSteps > 0 {
		out.MaxSteps = uint64(*b.MaxSteps)
	}
	if b.MaxStackDepth != nil {
		out.MaxStackDepth = int(*b.MaxStackDepth)
	}
	if b.MaxMemory != nil {
		out.MaxMemory = b.MaxMemory.Value()
	}
	return out
}

// DefaultWebhookTimeout is a webhook's timeout when its spec sets none.
const DefaultWebhookTimeout = 10 * time.Second

// webhookTimeout is the timeout a webhook's spec asks for, and the field that asks it.
func webhookTimeout(h *v1alpha1.Hook) (time.Duration, string) {
	if h.Webhook.Timeout != nil {
		return h.Webhook.Timeout.Duration, "webhook.timeout"
	}
	if h.Budget != nil && h.Budget.Timeout != nil {
		return h.Budget.Timeout.Duration, "budget.timeout"
	}
	return DefaultWebhookTimeout, ""
}

// WebhookTimeout is the timeout a webhook hook runs under: what its spec asks for, capped by
// ceiling when that is positive.
func WebhookTimeout(h *v1alpha1.Hook, ceiling time.Duration) time.Duration {
	t, _ := webhookTimeout(h)
	if ceiling > 0 && t > ceiling {
		return ceiling
	}
	return t
}

// buildWebhook resolves a webhook hook: its address, its connection settings (its own or its
// host's endpoint config), its decoding rules, its ETag cache and, for a tenant's, its
// policy.
func buildWebhook(ctx context.Context, s Spec, r SourceResolver) (*Webhook, error) {
	w := s.Def.Webhook
	address, err := WebhookURL(w)
	if err != nil {
		return nil, err
	}
	conn, field := connectionFor(w, address, s.EndpointConfigs)
	d, err := resolveConnection(ctx, conn, field, r, s.Tenant)
	if err != nil {
		return nil, err
	}
	out := &Webhook{URL: address, Timeout: WebhookTimeout(s.Def, s.WebhookCeiling), Client: d.client, Header: d.header, Tenant: s.Tenant != nil,
		MaxResponse: s.MaxAnswer, Memory: s.AnswerMemory,
		Response: ResponseRules{Hook: s.Hook, Fields: s.ResponseFields, Strict: strictResponses(s.Def)}}
	if e := w.Etag; e != nil && e.Enabled != nil && *e.Enabled {
		out.ETags = NewETagCache(seconds(e.CacheTimeoutSeconds, DefaultETagTimeout), seconds(e.CacheCleanupSeconds, DefaultETagCleanup))
	}
	return out, nil
}

// strictResponses is the hook's responseUnMarshallMode, by default strict for version v2
// hooks only.
func strictResponses(h *v1alpha1.Hook) bool {
	if m := h.Webhook.ResponseUnMarshallMode; m != nil {
		return *m == v1alpha1.ResponseUnMarshallModeStrict
	}
	return h.Version == v1alpha1.HookVersionV2
}

func seconds(s *int32, def time.Duration) time.Duration {
	if s == nil || *s <= 0 {
		return def
	}
	return time.Duration(*s) * time.Second
}

// Script invokes a function of a compiled program.
type Script struct {
	Program  scripting.Program
	Function string
	Budget   scripting.Budget
}

// Form implements Invoker.
func (s *Script) Form() string { return string(s.Program.Language()) }

// Invoke implements Invoker.
func (s *Script) Invoke(ctx context.Context, req map[string]any, log *slog.Logger) (map[string]any, error) {
	out, err := s.Program.Call(ctx, scripting.Invocation{Function: s.Function, Request: req, Budget: s.Budget, Log: log})
	if err != nil {
		return nil, err
	}
	return asObject(out)
}

func asObject(v any) (map[string]any, error) {
	switch o := v.(type) {
	case map[string]any:
		return o, nil
	case nil:
		return nil, &ResponseError{Msg: "the hook returned nothing (None/undefined); return an object"}
	default:
		return nil, &ResponseError{Msg: fmt.Sprintf("expected an object, got %T", v)}
	}
}

// Capped lists, as "budget.FIELD VALUE exceeds the engine's ceiling CEILING", each budget
// field of an inline hook that asks for more than ceilings allow: the invocation runs under
// the ceiling instead. A webhook hook is not run under these budgets; its timeout is capped by
// webhookCeiling when that is positive ("webhook.timeout VALUE exceeds ...").
func Capped(def *v1alpha1.Hook, ceilings scripting.Budget, webhookCeiling time.Duration) []string {
	if def != nil && def.Webhook != nil {
		if t, field := webhookTimeout(def); webhookCeiling > 0 && t > webhookCeiling {
			return []string{fmt.Sprintf("%s %s exceeds the engine's webhook ceiling %s", field, t, webhookCeiling)}
		}
		return nil
	}
	if def == nil || def.Budget == nil {
		return nil
	}
	asked := BudgetOf(def.Budget)
	var out []string
	if asked.Timeout > ceilings.Timeout {
		out = append(out, fmt.Sprintf("budget.timeout %s exceeds the engine's ceiling %s", asked.Timeout, ceilings.Timeout))
	}
	if asked.MaxSteps > ceilings.MaxSteps {
		out = append(out, fmt.Sprintf("budget.maxSteps %d exceeds the engine's ceiling %d", asked.MaxSteps, ceilings.MaxSteps))
	}
	if asked.MaxStackDepth > ceilings.MaxStackDepth {
		out = append(out, fmt.Sprintf("budget.maxStackDepth %d exceeds the engine's ceiling %d", asked.MaxStackDepth, ceilings.MaxStackDepth))
	}
	if asked.MaxMemory > ceilings.MaxMemory {
		out = append(out, fmt.Sprintf("budget.maxMemory %s exceeds the engine's ceiling %s",
			resource.NewQuantity(asked.MaxMemory, resource.BinarySI), resource.NewQuantity(ceilings.MaxMemory, resource.BinarySI)))
	}
	return out
}
