// Command strait is Strait's one binary. Daemons: hub (the ClusterSet controller),
// agent (one per node), dns (clusterset.local). For people: render (every member's
// desired objects, offline) and lab (whole clustersets on one machine).
//
// This package only wires flags to the packages that do the work; it holds no logic of
// its own beyond reading files and printing.
package main
