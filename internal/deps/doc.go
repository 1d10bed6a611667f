// Package deps holds the test that enforces the dependency rules of
// docs/architecture.md; it has no code of its own.
package deps
