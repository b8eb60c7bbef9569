package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator/config"
)

// TestParseDataParityAddonOperator reproduces addon-operator's ConfigMap
// parsing tests (kube_config_manager/backend/configmap) on data of our own.
func TestParseDataParityAddonOperator(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		for _, data := range []map[string]string{
			{"Bad-section-name": "a: 1\n"},
			{"someModule": "a: 1\n  b: 2\n"},
			{"someModule": "42"},
			{"someModuleEnabled": "maybe"},
			{"someModuleMaintenance": "Paused"},
			{"someModuleMaintenance": "noResourceReconciliation"},
		} {
			if _, err := config.ParseData(data, "cm", config.Limits{}); err == nil {
				t.Errorf("%v: no error", data)
			}
		}
	})
	t.Run("modules only", func(t *testing.T) {
		c, err := config.ParseData(map[string]string{
			"alpha":        "p: 1\nq: two\n",
			"alphaEnabled": "false",
			"beta":         "p: 2\n",
			"gammaEnabled": "true",
			// addon-operator's maintenance states: Managed ("") and
			// NoResourceReconciliation (also in lower case).
			"betaMaintenance":  "",
			"alphaMaintenance": "noresourcereconciliation",
			"gammaMaintenance": "NoResourceReconciliation",
		}, "cm", config.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Global != nil {
			t.Errorf("global section %+v, want none", c.Global)
		}
		if d := cmp.Diff(map[string]bool{"alpha": false, "gamma": true}, c.Enabled); d != "" {
			t.Errorf("flags (-want +got):\n%s", d)
		}
		if d := cmp.Diff(map[string]bool{"alpha": true, "beta": false, "gamma": true}, c.Maintenance); d != "" {
			t.Errorf("maintenance (-want +got):\n%s", d)
		}
		if len(c.Modules) != 2 || c.Modules["alpha"] == nil || c.Modules["beta"] == nil {
			t.Fatalf("module sections %v", c.Modules)
		}
		if d := cmp.Diff(map[string]any{"p": int64(1), "q": "two"}, c.Modules["alpha"].Values); d != "" {
			t.Errorf("alpha (-want +got):\n%s", d)
		}
	})
	t.Run("global only", func(t *testing.T) {
		c, err := config.ParseData(map[string]string{"global": "p: 1\n"}, "cm", config.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Global == nil || len(c.Modules) != 0 || len(c.Enabled) != 0 {
			t.Errorf("got global %v, modules %v, flags %v", c.Global, c.Modules, c.Enabled)
		}
	})
	for name, data := range map[string]map[string]string{"nil": nil, "empty": {}} {
		t.Run(name, func(t *testing.T) {
			c, err := config.ParseData(data, "cm", config.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if c.Global != nil || len(c.Modules) != 0 || len(c.Enabled) != 0 {
				t.Errorf("got global %v, modules %v, flags %v", c.Global, c.Modules, c.Enabled)
			}
		})
	}
	t.Run("module key with digits and numeric keys", func(t *testing.T) {
		c, err := config.ParseData(map[string]string{"l2Balancer": "4: \"123\"\n5: 5\nlist: [one, two]\n"}, "cm", config.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"4": "123", "5": int64(5), "list": []any{"one", "two"}}
		if d := cmp.Diff(want, c.Modules["l2Balancer"].Values); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
}
