package stdlib

var base64Cases = []callCase{
	{fn: "base64.encode", args: []any{"hello?>"}, want: "aGVsbG8/Pg=="},
	{fn: "base64.encode", args: []any{""}, want: ""},
	{fn: "base64.encode", args: []any{nil}, err: "argument 1 (text): expected string, got null"},
	{fn: "base64.decode", args: []any{"aGVsbG8/Pg=="}, want: "hello?>"},
	{fn: "base64.decode", args: []any{"aGVsbG8_Pg=="}, err: "argument 1 (data): invalid base64: illegal base64 data at input byte 7"},
	{fn: "base64.decode", args: []any{"/w=="}, err: "decoded bytes are not valid UTF-8 text"},
	{fn: "base64.url_encode", args: []any{"hello?>"}, want: "aGVsbG8_Pg=="},
	{fn: "base64.url_encode", args: []any{int64(1)}, err: "expected string, got int"},
	{fn: "base64.url_decode", args: []any{"aGVsbG8_Pg=="}, want: "hello?>"},
	{fn: "base64.url_decode", args: []any{"aGVsbG8/Pg=="}, err: "invalid base64"},
	{fn: "base64.raw_url_encode", args: []any{"hello?>"}, want: "aGVsbG8_Pg"},
	{fn: "base64.raw_url_encode", args: []any{true}, err: "expected string, got bool"},
	{fn: "base64.raw_url_decode", args: []any{"aGVsbG8_Pg"}, want: "hello?>"},
	{fn: "base64.raw_url_decode", args: []any{"aGVsbG8_Pg=="}, err: "invalid base64"},
}
