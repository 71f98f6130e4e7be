// Package cli is the plumbing Strait's two programs share, straitd (the daemons of the
// image) and strait (the people's CLI), and what the people's commands share among
// themselves.
//
// For both: Main runs a root command and turns its error into an exit status
// (ExitStatus, ErrReported); NewVersionCommand prints the build's version (Version);
// RESTConfig loads a daemon's client configuration; Context is a command's context.
//
// For the people's commands (cmd/strait/...): PersonConfig loads a person's kubeconfig
// as kubectl does and says which flag gives one when there is none; Contexts lists a
// kubeconfig's contexts, for completion and for diagnose's every member; Progress
// prints "… " lines to standard error; PrintJSONOrYAML prints -o json and -o yaml. What
// completes from the ClusterSet file is plan/file's, which reads it.
//
// It holds no command of its own beyond version: each daemon's command lives in the
// package of what it runs (controllers/hubcmd, nodeagent/agentcmd, dns/dnscmd,
// internal/probe), each of the people's in its own package under cmd/strait, and the two
// mains under cmd/ only put them together. It must not import any of those packages.
package cli
