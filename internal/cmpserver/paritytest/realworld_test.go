package paritytest_test

// realWorldCases are plugin.yaml files shaped as users write them (see
// realworld.go's comments for the style each follows).
func realWorldCases() []parityCase { return nil }
