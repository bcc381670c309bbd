package rundir

import (
	"fmt"
	"reflect"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Column types beyond the run tables' plain ones, for datasets that query
// engines read (headroom index): all portable to DuckDB, Trino, Spark and
// Athena.
//
//	time.Time          TIMESTAMP (microseconds, adjusted to UTC); the zero time is NULL
//	map[string]string  MAP<STRING, STRING>; nil is an empty map
//	[]int64, []float64, []string   LIST of that type; nil is an empty list
var (
	timeType = reflect.TypeFor[time.Time]()
	tsType   = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
)

func extendedType(t reflect.Type) (arrow.DataType, bool) {
	switch {
	case t == timeType:
		return tsType, true
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String:
		return arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), true
	case t.Kind() == reflect.Slice:
		switch t.Elem().Kind() {
		case reflect.Int64:
			return arrow.ListOf(arrow.PrimitiveTypes.Int64), true
		case reflect.Float64:
			return arrow.ListOf(arrow.PrimitiveTypes.Float64), true
		case reflect.String:
			return arrow.ListOf(arrow.BinaryTypes.String), true
		}
	}
	return nil, false
}

func appendExtended(b array.Builder, v reflect.Value) {
	switch b := b.(type) {
	case *array.TimestampBuilder:
		t := v.Interface().(time.Time)
		if t.IsZero() {
			b.AppendNull()
			return
		}
		b.Append(arrow.Timestamp(t.UnixMicro()))
	case *array.MapBuilder:
		b.Append(true)
		kb, ib := b.KeyBuilder().(*array.StringBuilder), b.ItemBuilder().(*array.StringBuilder)
		keys := v.MapKeys()
		sortValues(keys)
		for _, k := range keys {
			kb.Append(validUTF8(k.String()))
			ib.Append(validUTF8(v.MapIndex(k).String()))
		}
	case *array.ListBuilder:
		b.Append(true)
		for i := 0; i < v.Len(); i++ {
			e := v.Index(i)
			switch vb := b.ValueBuilder().(type) {
			case *array.Int64Builder:
				vb.Append(e.Int())
			case *array.Float64Builder:
				vb.Append(e.Float())
			case *array.StringBuilder:
				vb.Append(validUTF8(e.String()))
			}
		}
	}
}

func sortValues(vs []reflect.Value) {
	for i := 1; i < len(vs); i++ {
		for j := i; j > 0 && vs[j].String() < vs[j-1].String(); j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
}

// fillExtended reads a column of an extended type back into rows.
func fillExtended[T any](rows []T, f codecField, tbl arrow.Table) error {
	idx := tbl.Schema().FieldIndices(f.name)
	if len(idx) == 0 {
		return fmt.Errorf("missing column")
	}
	r := 0
	for _, chunk := range tbl.Column(idx[0]).Data().Chunks() {
		for i := 0; i < chunk.Len(); i++ {
			if chunk.IsNull(i) {
				continue
			}
			dst := reflect.ValueOf(&rows[r+i]).Elem().Field(f.index)
			if dst.Kind() == reflect.Pointer {
				p := reflect.New(dst.Type().Elem())
				dst.Set(p)
				dst = p.Elem()
			}
			if err := extendedValue(chunk, i, dst); err != nil {
				return err
			}
		}
		r += chunk.Len()
	}
	return nil
}

func extendedValue(chunk arrow.Array, i int, dst reflect.Value) error {
	switch a := chunk.(type) {
	case *array.Timestamp:
		if dst.Type() != timeType {
			break
		}
		dst.Set(reflect.ValueOf(a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UTC()))
		return nil
	case *array.Map:
		keys, ok1 := a.Keys().(*array.String)
		items, ok2 := a.Items().(*array.String)
		if !ok1 || !ok2 || dst.Kind() != reflect.Map {
			break
		}
		start, end := a.ValueOffsets(i)
		m := reflect.MakeMapWithSize(dst.Type(), int(end-start))
		for j := start; j < end; j++ {
			m.SetMapIndex(reflect.ValueOf(keys.Value(int(j))), reflect.ValueOf(items.Value(int(j))))
		}
		dst.Set(m)
		return nil
	case *array.List:
		if dst.Kind() != reflect.Slice {
			break
		}
		start, end := a.ValueOffsets(i)
		s := reflect.MakeSlice(dst.Type(), 0, int(end-start))
		for j := start; j < end; j++ {
			switch v := a.ListValues().(type) {
			case *array.Int64:
				s = reflect.Append(s, reflect.ValueOf(v.Value(int(j))).Convert(dst.Type().Elem()))
			case *array.Float64:
				s = reflect.Append(s, reflect.ValueOf(v.Value(int(j))).Convert(dst.Type().Elem()))
			case *array.String:
				s = reflect.Append(s, reflect.ValueOf(v.Value(int(j))).Convert(dst.Type().Elem()))
			default:
				return fmt.Errorf("list of %v does not fit %v", v.DataType(), dst.Type())
			}
		}
		dst.Set(s)
		return nil
	}
	return fmt.Errorf("type %v does not fit %v", chunk.DataType(), dst.Type())
}
