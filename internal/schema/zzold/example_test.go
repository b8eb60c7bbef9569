package schema_test

import (
	"fmt"

	"github.com/strata-dev/strata/internal/schema/zzold"
)

func Example() {
	s, err := schema.Parse([]byte(`
type: object
required: [image]
properties:
  replicas: {type: integer, default: 1}
  image:
    type: object
    required: [tag]
    properties:
      tag: {type: string}
      pullPolicy: {type: string, enum: [Always, IfNotPresent], default: IfNotPresent}
`), "values.yaml", schema.Options{AdditionalPropertiesFalse: true})
	if err != nil {
		fmt.Println(err)
		return
	}

	fmt.Println(s.Validate(map[string]any{"replicas": "three", "image": map[string]any{}, "extra": true}))

	values := s.ApplyDefaults(map[string]any{"image": map[string]any{"tag": "v1"}})
	fmt.Println(values)
	fmt.Println(s.Validate(values))
	// Output:
	// values do not match schema values.yaml:
	//   extra: property is not allowed (rule: additionalProperties)
	//   image.tag: required property is missing (rule: required)
	//   replicas: must be of type integer, got string "three" (rule: type)
	// map[image:map[pullPolicy:IfNotPresent tag:v1] replicas:1]
	// <nil>
}
