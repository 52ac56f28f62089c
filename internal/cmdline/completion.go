package cmdline

import (
	"fmt"
	"io"
	"strings"
)

// Shells are the shells WriteCompletion writes scripts for.
var Shells = []string{"bash", "zsh", "fish"}

// WriteCompletion writes a completion script for shell ("bash", "zsh" or
// "fish") that completes c's subcommands and each one's flags, for the
// programs named progs (c's name when none). The script is static: it is
// the tree as built now, so c should hold every subcommand with its flags.
func (c *Command) WriteCompletion(w io.Writer, shell string, progs ...string) error {
	if len(progs) == 0 {
		progs = []string{c.Name()}
	}
	var b strings.Builder
	switch shell {
	case "bash", "zsh":
		fn := "_" + strings.NewReplacer("-", "_", ".", "_").Replace(c.Name()) + "_complete"
		fmt.Fprintf(&b, "# %s completion for %s: source it, or put it where your shell loads completions.\n", shell, strings.Join(progs, ", "))
		if shell == "zsh" {
			b.WriteString("autoload -U +X bashcompinit && bashcompinit\n")
		}
		fmt.Fprintf(&b, "%s() {\n", fn)
		b.WriteString("    local cur=${COMP_WORDS[COMP_CWORD]}\n")
		b.WriteString("    if [[ $COMP_CWORD -eq 1 ]]; then\n")
		fmt.Fprintf(&b, "        COMPREPLY=($(compgen -W %q -- \"$cur\"))\n", strings.Join(append(c.names(), "help"), " "))
		b.WriteString("        return\n    fi\n")
		b.WriteString("    [[ $cur == -* ]] || return\n")
		b.WriteString("    case ${COMP_WORDS[1]} in\n")
		for _, s := range c.Commands() {
			if s.DisableFlagParsing {
				continue
			}
			fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", s.Name(), strings.Join(s.flagWords(), " "))
		}
		b.WriteString("    esac\n}\n")
		fmt.Fprintf(&b, "complete -o default -F %s %s\n", fn, strings.Join(progs, " "))
	case "fish":
		fmt.Fprintf(&b, "# fish completion for %s: save it as ~/.config/fish/completions/%s.fish\n", strings.Join(progs, ", "), progs[0])
		for _, p := range progs {
			for _, s := range c.Commands() {
				fmt.Fprintf(&b, "complete -c %s -f -n __fish_use_subcommand -a %s -d %s\n", p, s.Name(), fishQuote(s.Short))
				if s.DisableFlagParsing {
					continue
				}
				s.Flags().VisitAll(func(f *Flag) {
					fmt.Fprintf(&b, "complete -c %s -n '__fish_seen_subcommand_from %s' -l %s", p, s.Name(), f.Name)
					if f.Shorthand != "" {
						fmt.Fprintf(&b, " -s %s", f.Shorthand)
					}
					if f.NoOptDefVal == "" {
						b.WriteString(" -r")
					}
					fmt.Fprintf(&b, " -d %s\n", fishQuote(firstLine(f.Usage)))
				})
			}
		}
	default:
		return fmt.Errorf("cmdline: no completion for shell %q (accepted: %s)", shell, strings.Join(Shells, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// names are the subcommands' names in name order.
func (c *Command) names() []string {
	var out []string
	for _, s := range c.Commands() {
		out = append(out, s.Name())
	}
	return out
}

// flagWords are every spelling of c's flags (--name, -n) and --help.
func (c *Command) flagWords() []string {
	var out []string
	for _, f := range c.Flags().sorted() {
		out = append(out, "--"+f.Name)
		if f.Shorthand != "" {
			out = append(out, "-"+f.Shorthand)
		}
	}
	return append(out, "--help")
}

// fishQuote single-quotes s for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
