package report

// FormulaStart reports whether a CSV text cell whose escaped text starts
// with c is prefixed with ': a spreadsheet takes = + - @ as the start of
// a formula (OWASP's advice against CSV injection), and the ' of a value
// that began with one is doubled, so that dropping the first ' of any
// prefixed cell gives the value back exactly.
func FormulaStart(c byte) bool {
	return c == '=' || c == '+' || c == '-' || c == '@' || c == '\''
}

// AppendCell appends text s as a CSV cell holds it, unquoted: escaped by
// Sanitize (control characters, a newline too, invalid UTF-8, bidi
// controls and other invisible characters become backslash escapes, a
// backslash is doubled), then prefixed with ' when the escaped text
// starts with = + - @ or ' (FormulaStart). The report's CSV and export's
// cells (export.CellWriter, store.AppendSafeField) follow these rules.
//
// The prefix is decided on s[0]: the escaped text starts with s[0]
// exactly when s[0] is printable ASCII other than a backslash, and
// otherwise with a backslash or a byte >= 0x80, neither a formula start.
func AppendCell(dst []byte, s string) []byte {
	if s != "" && FormulaStart(s[0]) {
		dst = append(dst, '\'')
	}
	return Sanitize(dst, s)
}
