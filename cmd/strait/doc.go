// Command strait is the people's CLI: render (every member's desired objects, offline),
// diff (what a ClusterSet change would do in the live hub and members), lab (whole
// clustersets on one machine) and version. The daemons are the other binary,
// cmd/straitd, so that the lab's control-plane runner and pod emulation never ship in an
// image.
//
// This package only puts the commands together; each command's code lives in the
// package of what it runs (plan/rendercmd, controllers/diffcmd, lab/labcmd,
// internal/cli). See docs/architecture.md.
package main
