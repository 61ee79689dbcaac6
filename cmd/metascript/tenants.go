package main

import (
	"flag"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/manager"
)

// tenantFlags are the flags of `metascript run` that say what tenants' (namespaced)
// controllers may name: their ServiceAccount, and where their webhooks may connect.
type tenantFlags struct {
	accounts         string
	webhookAllow     string
	webhookPolicyFor string
}

const (
	tenantWebhookAllowFlag = manager.TenantWebhookAllowFlag
	tenantWebhookForFlag   = "--tenant-webhook-policy-for"
)

func (f *tenantFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.accounts, strings.TrimPrefix(manager.TenantAccountsFlag, "--"), "default-only",
		"the ServiceAccounts a namespaced controller may act as: default-only (its namespace's \"default\"), or any of its "+
			"namespace's; choose any only with the admission webhook installed, which checks that whoever writes a controller may use the account it names")
	fs.StringVar(&f.webhookAllow, strings.TrimPrefix(tenantWebhookAllowFlag, "--"), "",
		"where namespaced controllers' webhooks may connect, comma-separated: networks (10.0.0.0/8), addresses, host names "+
			"(hooks.example.com) and domains (.example.com); empty: anywhere but loopback, link-local (cloud metadata) and "+
			"unspecified addresses, which only a listed network within them lifts; the engine's own ports are refused whatever the list says")
	fs.StringVar(&f.webhookPolicyFor, strings.TrimPrefix(tenantWebhookForFlag, "--"), "namespaced",
		"whose webhooks the tenant webhook policy holds ("+tenantWebhookAllowFlag+", no redirects, no response body in errors): "+
			"namespaced controllers', or all, cluster-scoped controllers' too")
}

// apply sets what the flags say in opts: the accounts rule, and the webhook policy, with
// the ports of the engine's own servers (engineAddrs, HOST:PORT or empty) refused.
func (f *tenantFlags) apply(opts *engine.Options, engineAddrs ...string) error {
	accounts, err := manager.ParseTenantAccounts(f.accounts)
	if err != nil {
		return err
	}
	var forAll bool
	switch f.webhookPolicyFor {
	case "namespaced":
	case "all":
		forAll = true
	default:
		return fmt.Errorf("%s=%q: want namespaced or all", tenantWebhookForFlag, f.webhookPolicyFor)
	}
	nets, hosts, err := hooks.ParseEgressAllow(strings.Split(f.webhookAllow, ","))
	if err != nil {
		return fmt.Errorf("%s: %w", tenantWebhookAllowFlag, err)
	}
	egress := &hooks.Egress{Allow: nets, AllowHosts: hosts, Setting: tenantWebhookAllowFlag}
	for _, addr := range engineAddrs {
		if addr == "" {
			continue
		}
		_, p, err := net.SplitHostPort(addr)
		port, perr := strconv.ParseUint(p, 10, 16)
		if err != nil || perr != nil {
			return fmt.Errorf("listening address %q: want HOST:PORT with a numeric port", addr)
		}
		if port != 0 && !slices.Contains(egress.EnginePorts, uint16(port)) {
			egress.EnginePorts = append(egress.EnginePorts, uint16(port))
		}
	}
	opts.TenantAccounts, opts.TenantWebhooks, opts.TenantWebhooksForAll = accounts, egress, forAll
	return nil
}
