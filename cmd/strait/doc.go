// Command strait is the people's CLI: render (every member's desired objects, offline),
// diff (what a ClusterSet change would do in the live hub and members), show (what the
// clusterset is doing, per member), export and unexport (a service in the ClusterSet
// file, git first), lab (whole clustersets on one machine) and version (its own build
// and every running daemon's). The daemons are the other binary,
// cmd/straitd, so that the lab's control-plane runner and pod emulation never ship in an
// image.
//
// This package only puts the commands together; each command's code lives in the
// package of what it runs (plan/rendercmd, plan/exportcmd, controllers/diffcmd,
// controllers/showcmd, lab/labcmd). See docs/architecture.md and docs/cli.md.
package main
