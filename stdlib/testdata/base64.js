function sync(request) {
  var text = "hello?> ünïcode";
  return {
    encode: base64.encode(text),
    decode: base64.decode(base64.encode(text)),
    url_encode: base64.url_encode(text),
    url_decode: base64.url_decode(base64.url_encode(text)),
    raw_url_encode: base64.raw_url_encode(text),
    raw_url_decode: base64.raw_url_decode("aGVsbG8_Pg"),
  };
}
