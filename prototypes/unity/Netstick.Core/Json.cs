using System;
using System.Collections;
using System.Globalization;
using System.Text;

namespace Netstick.Core
{
    /// <summary>
    /// A minimal JSON writer (mono 6.8 has no System.Text.Json): null, bool, strings with escapes,
    /// integers, invariant-culture floating point (non-finite as null), dictionaries with string keys
    /// (in their own order) and any other enumerable as an array.
    /// </summary>
    public static class Json
    {
        /// <summary>value as JSON; indented with two spaces when indent is true.</summary>
        public static string Serialize(object value, bool indent = false)
        {
            var sb = new StringBuilder();
            Write(sb, value, indent, 0);
            return sb.ToString();
        }

        /// <summary>s as a JSON string literal, quotes included.</summary>
        public static string Quote(string s)
        {
            var sb = new StringBuilder(s.Length + 2);
            WriteString(sb, s);
            return sb.ToString();
        }

        private static void Write(StringBuilder sb, object v, bool indent, int depth)
        {
            if (v == null)
            {
                sb.Append("null");
                return;
            }
            string s = v as string;
            if (s != null)
            {
                WriteString(sb, s);
                return;
            }
            if (v is bool)
            {
                sb.Append((bool)v ? "true" : "false");
                return;
            }
            if (v is char)
            {
                WriteString(sb, v.ToString());
                return;
            }
            if (v is int || v is long || v is short || v is sbyte || v is uint || v is ulong || v is ushort || v is byte)
            {
                sb.Append(((IFormattable)v).ToString(null, CultureInfo.InvariantCulture));
                return;
            }
            if (v is double || v is float || v is decimal)
            {
                WriteNumber(sb, v);
                return;
            }
            if (v is Enum)
            {
                WriteString(sb, v.ToString());
                return;
            }
            var dict = v as IDictionary;
            if (dict != null)
            {
                WriteObject(sb, dict, indent, depth);
                return;
            }
            var list = v as IEnumerable;
            if (list != null)
            {
                WriteArray(sb, list, indent, depth);
                return;
            }
            throw new ArgumentException("Json: cannot write a " + v.GetType().FullName);
        }

        private static void WriteNumber(StringBuilder sb, object v)
        {
            if (v is decimal)
            {
                sb.Append(((decimal)v).ToString(CultureInfo.InvariantCulture));
                return;
            }
            double d = v is float ? (double)(float)v : (double)v;
            if (double.IsNaN(d) || double.IsInfinity(d))
            {
                sb.Append("null"); // JSON has no NaN or Infinity
                return;
            }
            // "R" round-trips; it may give an exponent ("1E+20"), which JSON allows.
            string text = d.ToString("R", CultureInfo.InvariantCulture);
            sb.Append(text);
        }

        private static void NewLine(StringBuilder sb, bool indent, int depth)
        {
            if (!indent)
            {
                return;
            }
            sb.Append('\n');
            sb.Append(' ', 2 * depth);
        }

        private static void WriteObject(StringBuilder sb, IDictionary dict, bool indent, int depth)
        {
            if (dict.Count == 0)
            {
                sb.Append("{}");
                return;
            }
            sb.Append('{');
            bool first = true;
            foreach (DictionaryEntry e in dict)
            {
                if (!first)
                {
                    sb.Append(',');
                }
                first = false;
                NewLine(sb, indent, depth + 1);
                string key = e.Key as string;
                if (key == null)
                {
                    throw new ArgumentException("Json: object keys must be strings, got " + e.Key.GetType().FullName);
                }
                WriteString(sb, key);
                sb.Append(indent ? ": " : ":");
                Write(sb, e.Value, indent, depth + 1);
            }
            NewLine(sb, indent, depth);
            sb.Append('}');
        }

        private static void WriteArray(StringBuilder sb, IEnumerable list, bool indent, int depth)
        {
            sb.Append('[');
            bool first = true;
            foreach (object item in list)
            {
                if (!first)
                {
                    sb.Append(',');
                }
                first = false;
                NewLine(sb, indent, depth + 1);
                Write(sb, item, indent, depth + 1);
            }
            if (!first)
            {
                NewLine(sb, indent, depth);
            }
            sb.Append(']');
        }

        private static void WriteString(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (char c in s)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    case '\b': sb.Append("\\b"); break;
                    case '\f': sb.Append("\\f"); break;
                    default:
                        // Control characters, and U+2028/U+2029 that JavaScript parsers choke on.
                        if (c < 0x20 || c == '\u2028' || c == '\u2029')
                        {
                            sb.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                        }
                        else
                        {
                            sb.Append(c);
                        }
                        break;
                }
            }
            sb.Append('"');
        }
    }
}
