package classify

import "slices"

// Ordered returns the rules a Classifier tries, in order: the user's, then
// the built-in ones. The admission policies of package contract classify a
// request's field manager with the same list.
func Ordered(user []Rule) []Rule {
	return append(slices.Clone(user), builtin...)
}
