package schema

// Validators in strict mode (ajv --strict=true) reject a schema whose
// required names a property its own schema object does not define
// (strictRequired), and a keyword on a type it does not apply to, such as
// minimum on a string (strictTypes). The conditional rules (if/then,
// oneOf, not) name required keys only; strictSchema defines each with the
// empty schema beside it, which changes nothing that validates
// (docs/job-file.md, "Editor support").

// strictSchema makes s and every schema inside it pass strict mode.
func strictSchema(s *Schema) {
	if s == nil {
		return
	}
	for _, name := range s.Required {
		if s.Properties.Get(name) == nil {
			if s.Properties == nil {
				s.Properties = &Properties{}
			}
			*s.Properties = append(*s.Properties, Property{Name: name, Schema: &Schema{}})
		}
	}
	if s.Type != "integer" && s.Type != "number" && s.Type != "" {
		s.Minimum, s.Maximum = nil, nil
	}
	if s.Properties != nil {
		for _, p := range *s.Properties {
			strictSchema(p.Schema)
		}
	}
	if s.Definitions != nil {
		for _, p := range *s.Definitions {
			strictSchema(p.Schema)
		}
	}
	if sub, ok := s.AdditionalProperties.(*Schema); ok {
		strictSchema(sub)
	}
	for _, sub := range [...]*Schema{s.PropertyNames, s.Items, s.Not, s.If, s.Then} {
		strictSchema(sub)
	}
	for _, list := range [...][]*Schema{s.AnyOf, s.OneOf, s.AllOf} {
		for _, sub := range list {
			strictSchema(sub)
		}
	}
}
