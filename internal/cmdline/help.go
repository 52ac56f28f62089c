package cmdline

import (
	"slices"
	"strings"
)

// Help returns the command's help: the long text, usage, subcommands,
// examples and flags.
func (c *Command) Help() string {
	var b strings.Builder
	text := c.Long
	if text == "" {
		text = c.Short
	}
	if text = strings.TrimRight(text, " \t\n"); text != "" {
		b.WriteString(text)
		b.WriteString("\n\n")
	}
	b.WriteString("Usage:")
	if c.RunE != nil {
		b.WriteString("\n  " + c.useLine())
	}
	if len(c.commands) > 0 {
		b.WriteString("\n  " + c.CommandPath() + " [command]")
	}
	if c.Example != "" {
		b.WriteString("\n\nExamples:\n" + c.Example)
	}
	if len(c.commands) > 0 {
		b.WriteString("\n\nAvailable Commands:")
		type entry struct{ name, short string }
		var list []entry
		for _, s := range c.commands {
			list = append(list, entry{s.Name(), s.Short})
		}
		if c.parent == nil {
			list = append(list, entry{"help", "Help about any command"})
		}
		slices.SortFunc(list, func(a, b entry) int { return strings.Compare(a.name, b.name) })
		width := 0
		for _, e := range list {
			width = max(width, len(e.name))
		}
		for _, e := range list {
			b.WriteString("\n  " + e.name + strings.Repeat(" ", width-len(e.name)+1) + e.short)
		}
	}
	if !c.DisableFlagParsing {
		fs := NewFlagSet(c.Name())
		c.Flags().VisitAll(fs.AddFlag)
		if fs.Lookup("help") == nil {
			var h bool
			short := "h"
			if fs.shorthand('h') != nil {
				short = ""
			}
			fs.BoolVarP(&h, "help", short, false, "help for "+c.Name())
		}
		b.WriteString("\n\nFlags:\n")
		b.WriteString(strings.TrimRight(fs.FlagUsages(), " \n"))
	}
	if len(c.commands) > 0 {
		b.WriteString("\n\nUse \"" + c.CommandPath() + " [command] --help\" for more information about a command.")
	}
	b.WriteString("\n")
	return b.String()
}

// useLine is Use under the parent's path, with "[flags]" when the command
// has flags.
func (c *Command) useLine() string {
	line := c.Use
	if c.parent != nil {
		line = c.parent.CommandPath() + " " + c.Use
	}
	if !c.DisableFlagParsing && !strings.Contains(line, "[flags]") {
		line += " [flags]"
	}
	return line
}

// writeHelp writes Help to the command's standard output.
func (c *Command) writeHelp() error {
	_, err := c.OutOrStdout().Write([]byte(c.Help()))
	return err
}
