package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// Conforms reports, as an error, where msg (a JSON-shaped request or response) does not
// have the shape of into (a pointer to one of this package's structs): a field into lacks,
// at the top level or inside the typed parts (metadata, events, rules), or a value of the
// wrong type. It decodes msg into into, refusing unknown fields, then encodes into again
// and requires the same JSON: what into cannot hold would be lost. Zero values of
// omitempty fields are lost too, so msg should not spell them out.
func Conforms(msg any, into any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return err
	}
	again, err := json.Marshal(into)
	if err != nil {
		return err
	}
	var want, got any
	if err := json.Unmarshal(data, &want); err != nil {
		return err
	}
	if err := json.Unmarshal(again, &got); err != nil {
		return err
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("%T does not hold all of it:\n sent      %s\n as %T %s", into, data, into, again)
	}
	return nil
}
