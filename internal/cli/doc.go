// Package cli is the plumbing both of Strait's programs share: straitd (the daemons of
// the image) and strait (the people's CLI). It runs a root command and turns its error
// into an exit status (Main), prints the build's version (NewVersionCommand) and loads
// a client configuration (RESTConfig).
//
// It holds no command of its own beyond version: each command lives in the package of
// what it runs (controllers/hubcmd, nodeagent/agentcmd, dns/dnscmd, plan/rendercmd,
// lab/labcmd) and the two mains under cmd/ only put them together. It must not import
// any of those packages.
package cli
