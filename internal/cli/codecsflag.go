package cli

import (
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-dev/strata/internal/document"
)

// codecsFlag is a boolean flag bound to the one reference switch of the
// fast codecs: true is document.FastCodecs, false
// document.ReferenceCodecs. Several names may be bound to one switch (the
// older --helm-fast-yaml beside --fast-codecs): the last one given wins.
type codecsFlag struct{ c *document.Codecs }

var _ pflag.Value = codecsFlag{}

func (f codecsFlag) String() string {
	if f.c == nil {
		return "true"
	}
	return strconv.FormatBool(f.c.Fast())
}

func (f codecsFlag) Set(v string) error {
	fast, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*f.c = document.ReferenceCodecs
	if fast {
		*f.c = document.FastCodecs
	}
	return nil
}

func (f codecsFlag) Type() string { return "bool" }

// fastCodecsUsage is --fast-codecs' help; %s says what the codecs read
// and write in the command.
const fastCodecsUsage = "read and write YAML and JSON (%s) with strata's fast codecs; false uses the reference codecs only (Helm's own, sigs.k8s.io/yaml, encoding/json: the same results, slower), for when a result looks wrong"

// bindCodecs binds the boolean flag name to c.
func bindCodecs(fs *pflag.FlagSet, c *document.Codecs, name, usage string) {
	fs.VarPF(codecsFlag{c}, name, "", usage).NoOptDefVal = "true"
}

// commandCodecs is the switch cmd's --fast-codecs (or its older name) set,
// FastCodecs for a command without the flag.
func commandCodecs(cmd *cobra.Command) document.Codecs {
	if f := cmd.Flags().Lookup("fast-codecs"); f != nil {
		if v, ok := f.Value.(codecsFlag); ok && v.c != nil {
			return *v.c
		}
	}
	return document.FastCodecs
}
