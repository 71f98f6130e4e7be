package main

import (
	"strings"
	"testing"
)

// The people's CLI holds no daemon: those are straitd's.
func TestPeoplesCommandsAreTheSubcommands(t *testing.T) {
	var got []string
	for _, c := range newRootCmd().Commands() {
		got = append(got, c.Name())
	}
	if strings.Join(got, " ") != "diff export lab render show unexport version" {
		t.Errorf("strait's subcommands are %v, want diff export lab render show unexport version", got)
	}
}
