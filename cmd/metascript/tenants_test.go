package main

import (
	"fmt"
	"strings"
	"testing"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/manager"
)

// TestTenantFlags: what `metascript run`'s tenant flags put in the engine's options, and the
// engine's own ports the webhook policy refuses, from its listening addresses.
func TestTenantFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		addrs []string
		want  string // accounts forAll allow hosts ports, or the error
	}{
		{"defaults", nil, []string{":9090", ":9091", "", defaultDebugAddr},
			"default-only false [] [] [9090 9091 9092]"},
		{"any account, an allow list, for all", []string{"--tenant-service-accounts=any",
			"--tenant-webhook-allow=10.0.0.0/8, hooks.example.com,*.svc,192.168.1.9", "--tenant-webhook-policy-for=all"},
			[]string{"127.0.0.1:9090", ":9090", ":0"}, "any true [10.0.0.0/8 192.168.1.9/32] [hooks.example.com .svc] [9090]"},
		{"a bad account rule", []string{"--tenant-service-accounts=some"}, nil,
			`--tenant-service-accounts="some": want default-only or any`},
		{"a bad scope", []string{"--tenant-webhook-policy-for=cluster"}, nil,
			`--tenant-webhook-policy-for="cluster": want namespaced or all`},
		{"a URL in the allow list", []string{"--tenant-webhook-allow=https://hooks.example.com"}, nil,
			`--tenant-webhook-allow: "https://hooks.example.com" is neither`},
		{"a listening address without a port", nil, []string{"localhost"},
			`listening address "localhost": want HOST:PORT`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseEngineFlags(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			var opts engine.Options
			got := ""
			if err := f.tenants.apply(&opts, tc.addrs...); err != nil {
				got = err.Error()
			} else {
				e := opts.TenantWebhooks
				got = fmt.Sprint(opts.TenantAccounts, " ", opts.TenantWebhooksForAll, " ", e.Allow, " ", e.AllowHosts, " ", e.EnginePorts)
				if e.Setting != "--tenant-webhook-allow" {
					t.Errorf("the policy names its setting %q", e.Setting)
				}
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	if manager.DefaultAccountOnly != (engine.Options{}).TenantAccounts {
		t.Error("the zero engine.Options does not run tenants as their default account only")
	}
}
