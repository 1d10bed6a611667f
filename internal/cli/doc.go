// Package cli is what the commands of chaos share beyond their flags: the
// one style in which every command refuses a flag value, the
// validation-only mode in which a command checks its flags and starts
// nothing, Ctrl-C handling, and the version a binary reports.
//
// The packages that check a command's values (broker/node for the
// broker's and controller's, runner and results for the tester's) return
// errors in its style, so a refusal reads the same whichever package
// made it. It imports no package of the module: the broker and the
// tester both use it, and neither may import the other.
package cli
