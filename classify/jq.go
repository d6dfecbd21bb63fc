package classify

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"
)

// JQLimits bound what one jq path expression may cost on one live object.
// Ignore rules come from the config and, with --from argocd, from tenants'
// Applications, and they run on live objects tenants write: none of these
// may stall or swamp the scan.
type JQLimits struct {
	// Timeout bounds one expression on one object. Argo CD gives a jq
	// ignoreDifferences expression 1 s (DefaultJQExecutionTimeout in
	// util/argo/normalizers/diff_normalizer.go, setting
	// ignore.normalizer.jq.timeout); so does DefaultJQLimits.
	Timeout time.Duration
	// MaxPaths bounds the paths one expression may select on one object.
	MaxPaths int
}

// DefaultJQLimits are 1 s and 10,000 paths per expression and object.
func DefaultJQLimits() JQLimits { return JQLimits{Timeout: time.Second, MaxPaths: 10000} }

// jqExpr is one compiled jqPathExpression.
type jqExpr struct {
	text string
	code *gojq.Code
}

// compileJQ checks that expr uses only what a path expression needs (see
// checkJQ), and compiles path(expr) with no access to the environment.
func compileJQ(expr string) (*jqExpr, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, err
	}
	if err := checkJQ(q); err != nil {
		return nil, err
	}
	code, err := gojq.Compile(&gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: "path", Args: []*gojq.Query{q}}}},
		// No $ENV and no env: an expression must not read the scan's
		// credentials, not even one bit at a time through what it ignores.
		gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, err
	}
	return &jqExpr{text: expr, code: code}, nil
}

// errJQLimit marks an expression that ran past JQLimits.
var errJQLimit = errors.New("over the jq limits")

// pointers runs the expression on doc (JSON types only) and returns the
// RFC 6901 pointers of the paths it selects. An error of the expression
// itself (a field that is not an object, say) selects nothing there, as in
// Argo CD; running past lim is an error that wraps errJQLimit.
func (e *jqExpr) pointers(doc any, lim JQLimits) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lim.Timeout)
	defer cancel()
	iter := e.code.RunWithContext(ctx, doc)
	var out []string
	for {
		v, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if err, isErr := v.(error); isErr {
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("timed out after %s (%w)", lim.Timeout, errJQLimit)
			}
			continue
		}
		path, ok := v.([]any)
		if !ok {
			continue
		}
		if len(out) == lim.MaxPaths {
			return nil, fmt.Errorf("selects more than %d paths (%w)", lim.MaxPaths, errJQLimit)
		}
		var b strings.Builder
		for _, el := range path {
			b.WriteByte('/')
			switch p := el.(type) {
			case string:
				b.WriteString(strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1"))
			case int:
				b.WriteString(strconv.Itoa(p))
			default:
				fmt.Fprint(&b, p)
			}
		}
		out = append(out, b.String())
	}
}

// jqFuncs are the functions, by name/arity, a jqPathExpression may call:
// those that select and test. Each returns a value no larger than its
// input, so no expression can build a value that outgrows the object it
// runs on; what builds values (tojson, tostring, join, add, @base64,
// string interpolation, + and *: "x" * 1e9 allocates a gigabyte in one
// step, which no timeout interrupts), loops (range, repeat, limit, until,
// recurse(f), reduce, foreach, def) and reads the process (env, $ENV,
// input, debug, stderr) are refused when the rule is loaded.
var jqFuncs = map[string]bool{
	"path/1": true, "select/1": true, "empty/0": true, "not/0": true, "error/0": true, "error/1": true,
	"has/1": true, "in/1": true, "contains/1": true, "inside/1": true,
	"test/1": true, "test/2": true, "startswith/1": true, "endswith/1": true,
	"ltrimstr/1": true, "rtrimstr/1": true, "ascii_downcase/0": true, "ascii_upcase/0": true,
	"length/0": true, "utf8bytelength/0": true, "type/0": true,
	"keys/0": true, "keys_unsorted/0": true, "values/0": true,
	"arrays/0": true, "objects/0": true, "iterables/0": true, "booleans/0": true, "numbers/0": true,
	"strings/0": true, "nulls/0": true, "scalars/0": true,
	"any/0": true, "any/1": true, "any/2": true, "all/0": true, "all/1": true, "all/2": true,
	"map/1": true, "first/0": true, "first/1": true, "last/0": true, "last/1": true,
	"index/1": true, "rindex/1": true, "indices/1": true, "isempty/1": true,
	"recurse/0": true, "paths/0": true, "paths/1": true, "leaf_paths/0": true, "getpath/1": true,
	"tonumber/0": true, "$__loc__/0": true,
}

// jqOps are the binary operators a jqPathExpression may use.
var jqOps = map[gojq.Operator]bool{
	gojq.OpPipe: true, gojq.OpComma: true, gojq.OpAlt: true, gojq.OpAnd: true, gojq.OpOr: true,
	gojq.OpEq: true, gojq.OpNe: true, gojq.OpGt: true, gojq.OpLt: true, gojq.OpGe: true, gojq.OpLe: true,
}

// checkJQ refuses what a path expression does not need and could turn
// against the scan (see jqFuncs).
func checkJQ(q *gojq.Query) error {
	if q == nil {
		return nil
	}
	switch {
	case len(q.Imports) > 0:
		return errors.New("import and include are not allowed in an ignore rule")
	case len(q.FuncDefs) > 0:
		return fmt.Errorf("def %s is not allowed in an ignore rule (a function can call itself forever)", q.FuncDefs[0].Name)
	case q.Op != 0 && !jqOps[q.Op]:
		return fmt.Errorf("operator %s is not allowed in an ignore rule (only comparisons, and, or, //, | and ,)", q.Op)
	}
	for _, sub := range append([]*gojq.Query{q.Left, q.Right}, patternQueries(q.Patterns)...) {
		if err := checkJQ(sub); err != nil {
			return err
		}
	}
	return checkJQTerm(q.Term)
}

// patternQueries are the queries inside `as` destructuring patterns.
func patternQueries(ps []*gojq.Pattern) []*gojq.Query {
	var out []*gojq.Query
	for _, p := range ps {
		out = append(out, patternQueries(p.Array)...)
		for _, o := range p.Object {
			out = append(out, o.KeyQuery)
			if o.KeyString != nil {
				out = append(out, o.KeyString.Queries...)
			}
			if o.Val != nil {
				out = append(out, patternQueries([]*gojq.Pattern{o.Val})...)
			}
		}
	}
	return out
}

func checkJQTerm(t *gojq.Term) error {
	if t == nil {
		return nil
	}
	var subs []*gojq.Query
	switch t.Type {
	case gojq.TermTypeIdentity, gojq.TermTypeRecurse, gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse, gojq.TermTypeNumber:
	case gojq.TermTypeIndex:
		subs = append(subs, indexQueries(t.Index)...)
	case gojq.TermTypeFunc:
		name := t.Func.Name + "/" + strconv.Itoa(len(t.Func.Args))
		if strings.HasPrefix(t.Func.Name, "$") && t.Func.Name != "$ENV" && t.Func.Name != "$__prog_args" {
			break // a variable the expression bound itself
		}
		if !jqFuncs[name] {
			return fmt.Errorf("%s is not allowed in an ignore rule (only functions that select and test)", name)
		}
		subs = append(subs, t.Func.Args...)
	case gojq.TermTypeObject:
		for _, kv := range t.Object.KeyVals {
			if kv.KeyString != nil && len(kv.KeyString.Queries) > 0 {
				return errors.New("string interpolation is not allowed in an ignore rule")
			}
			subs = append(subs, kv.KeyQuery, kv.Val)
		}
	case gojq.TermTypeArray:
		subs = append(subs, t.Array.Query)
	case gojq.TermTypeUnary:
		if err := checkJQTerm(t.Unary.Term); err != nil {
			return err
		}
	case gojq.TermTypeString:
		if len(t.Str.Queries) > 0 {
			return errors.New("string interpolation is not allowed in an ignore rule")
		}
	case gojq.TermTypeIf:
		subs = append(subs, t.If.Cond, t.If.Then, t.If.Else)
		for _, e := range t.If.Elif {
			subs = append(subs, e.Cond, e.Then)
		}
	case gojq.TermTypeTry:
		subs = append(subs, t.Try.Body, t.Try.Catch)
	case gojq.TermTypeQuery:
		subs = append(subs, t.Query)
	case gojq.TermTypeFormat:
		return fmt.Errorf("%s is not allowed in an ignore rule (it builds a new string)", t.Format)
	case gojq.TermTypeReduce, gojq.TermTypeForeach:
		return errors.New("reduce and foreach are not allowed in an ignore rule (they build values step by step)")
	default: // label, break
		return errors.New("label and break are not allowed in an ignore rule (only paths, comparisons and functions that select)")
	}
	for _, s := range t.SuffixList {
		if s.Index != nil {
			subs = append(subs, indexQueries(s.Index)...)
		}
	}
	for _, s := range subs {
		if err := checkJQ(s); err != nil {
			return err
		}
	}
	return nil
}

func indexQueries(ix *gojq.Index) []*gojq.Query {
	out := []*gojq.Query{ix.Start, ix.End}
	if ix.Str != nil {
		out = append(out, ix.Str.Queries...)
	}
	return out
}
