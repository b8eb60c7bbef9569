package params_test

import (
	"fmt"

	"github.com/strata-dev/strata/internal/params"
)

func ExampleEnv() {
	ps, err := params.ParseParameters([]byte(`[
		{"name": "values-files", "array": ["values.yaml"]},
		{"name": "helm-parameters", "map": {"image.tag": "0.1"}}
	]`), "ARGOCD_APP_PARAMETERS")
	if err != nil {
		fmt.Println(err)
		return
	}
	build := []string{"ARGOCD_APP_NAME=guestbook", "PARAM_HELM_PARAMETERS_IMAGE_TAG=pinned"}
	for _, kv := range params.Env(ps, build) {
		fmt.Println(kv)
	}
	// Output:
	// ARGOCD_APP_PARAMETERS=[{"name":"values-files","array":["values.yaml"]},{"name":"helm-parameters","map":{"image.tag":"0.1"}}]
	// PARAM_VALUES_FILES_0=values.yaml
}

func ExampleParseAnnouncements() {
	_, _, err := params.ParseAnnouncements([]byte(`- name: replicas
  itemType: number
  string: three
`), "plugin.yaml")
	fmt.Println(err)
	// Output:
	// plugin.yaml:3: announcement [0] "replicas": string: "three" is not a number, but itemType is number; write a number such as 3 or 2.5, or change itemType
}
