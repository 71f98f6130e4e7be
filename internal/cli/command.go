package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Context is the command's context, or context.Background when it runs without one
// (Execute rather than ExecuteContext, as tests call it).
func Context(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// Progress prints a command's progress to w (standard error), one "… " line each, apart
// from what it prints as its result.
func Progress(w io.Writer) func(format string, a ...any) {
	return func(format string, a ...any) { fmt.Fprintf(w, "… "+format+"\n", a...) }
}

// PrintJSONOrYAML prints v as -o json (indented) or, for any other format, -o yaml.
func PrintJSONOrYAML(w io.Writer, v any, format string) error {
	var b []byte
	var err error
	if format == "json" {
		b, err = json.MarshalIndent(v, "", "  ")
		b = append(b, '\n')
	} else {
		b, err = yaml.Marshal(v)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
