package manager

import (
	"fmt"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/reconcile"
)

// TenantAccounts says which of its namespace's ServiceAccounts a namespaced controller may
// act as. Nothing in the engine can tell whether whoever wrote a controller may act as the
// account it names; the admission webhook can (metascript admission), so an engine without
// it runs tenants' controllers as their namespace's default account only.
type TenantAccounts int

const (
	// DefaultAccountOnly refuses a namespaced controller naming any account but its
	// namespace's "default".
	DefaultAccountOnly TenantAccounts = iota
	// AnyAccount lets a namespaced controller name any account of its namespace: for an
	// engine whose admission webhook checks that the writer may use it.
	AnyAccount
)

// The flags of `metascript run` that set Options.TenantAccounts and the Allow lists of
// Options.TenantWebhooks, as messages name them.
const (
	TenantAccountsFlag     = "--tenant-service-accounts"
	TenantWebhookAllowFlag = "--tenant-webhook-allow"
)

// String is the flag's value: default-only or any.
func (a TenantAccounts) String() string {
	if a == AnyAccount {
		return "any"
	}
	return "default-only"
}

// ParseTenantAccounts reads the flag's value.
func ParseTenantAccounts(s string) (TenantAccounts, error) {
	switch s {
	case "default-only":
		return DefaultAccountOnly, nil
	case "any":
		return AnyAccount, nil
	}
	return 0, fmt.Errorf("%s=%q: want default-only or any", TenantAccountsFlag, s)
}

// checkTenantAccount refuses the account sa of a namespaced controller of kind when the
// engine lets tenants act as their namespace's default account only.
func (m *Manager) checkTenantAccount(kind *reconcile.Descriptor, sa *v1alpha1.ServiceAccountReference) error {
	if !kind.Namespaced || sa == nil || sa.Name == "default" || m.opts.TenantAccounts == AnyAccount {
		return nil
	}
	return &buildError{reason: "InvalidSpec", err: fmt.Errorf(
		"spec.serviceAccount.name: %q: this engine runs a %s as its namespace's \"default\" ServiceAccount only; "+
			"remove spec.serviceAccount, or ask the platform to start the engine with %s=any, with the admission webhook "+
			"installed to check that whoever writes a controller may use the account it names",
		sa.Name, kind.Kind, TenantAccountsFlag)}
}

// webhookPolicy is the policy a controller's webhooks are built under: the tenants' for a
// namespaced controller, and for every controller with Options.TenantWebhooksForAll; nil
// for a cluster-scoped controller otherwise.
func (m *Manager) webhookPolicy(decl *reconcile.Declared) *hooks.Egress {
	if decl.Namespace == "" && !m.opts.TenantWebhooksForAll {
		return nil
	}
	return m.opts.TenantWebhooks
}
