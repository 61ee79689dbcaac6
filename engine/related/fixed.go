package related

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/resources"
)

// Fixed is a Tracker's offline counterpart: the related objects of parents read from caches
// that do not change while it is used (the objects an offline command was given), with no
// informer, index or event routing. It keeps no customize answer, so every Rules call asks.
// It is safe for concurrent use when its caches are.
type Fixed[P comparable] struct {
	resolver Resolver
	version  v1alpha1.HookVersion
	reach    Reach
	caches   func(resources.Resource) cache.Indexer
}

// NewFixed returns a Fixed that resolves the resources of customize answers with resolver,
// keys related objects as hooks of version ask, lets a namespaced parent's rules select as
// far as reach, and reads each resource's objects from caches (nil when there are none).
func NewFixed[P comparable](resolver Resolver, version v1alpha1.HookVersion, reach Reach, caches func(resources.Resource) cache.Indexer) *Fixed[P] {
	return &Fixed[P]{resolver: resolver, version: version, reach: reach, caches: caches}
}

// Rules returns what ask answers, validated whole as Tracker.Rules validates it.
func (f *Fixed[P]) Rules(parent *unstructured.Unstructured, _ string, ask func() (map[string]any, error)) ([]Rule, error) {
	resp, err := ask()
	if err != nil {
		return nil, err
	}
	return parseCustomize(resp, parent, f.resolver, f.reach)
}

// Objects returns the request's related map of parent under rules, as Tracker.Objects does.
func (f *Fixed[P]) Objects(_ context.Context, parent *unstructured.Unstructured, rules []Rule) (map[string]any, error) {
	return objectMap(parent, rules, f.version, f.caches), nil
}

// Bind, Forget and Stop do nothing: no event reaches a Fixed.
func (f *Fixed[P]) Bind(P, []Rule)      {}
func (f *Fixed[P]) Forget(P, types.UID) {}
func (f *Fixed[P]) Stop()               {}
