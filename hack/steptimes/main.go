package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "steptimes:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: steptimes tee | steptimes table [-all] [FILE]")
	}
	file := os.Getenv("STRAIT_TIMES")
	if file == "" {
		file = filepath.Join("bin", "times.tsv")
	}
	switch args[0] {
	case "tee":
		var parent []string
		if s := os.Getenv("STRAIT_STEP"); s != "" {
			parent = strings.Split(s, Sep)
		}
		return tee(stdin, stdout, file, NewReader(parent))
	case "table":
		fs := flag.NewFlagSet("table", flag.ContinueOnError)
		all := fs.Bool("all", false, "every package and test, not only the slowest 15 of each")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			file = fs.Arg(0)
		}
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		rows, err := ParseRows(f)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		fmt.Fprintf(stdout, "== where the time went (%s)\n", file)
		Table(stdout, rows, *all)
		return nil
	}
	return fmt.Errorf("unknown subcommand %q: tee or table", args[0])
}

// tee copies in to out line by line and appends the rows the lines complete to file.
func tee(in io.Reader, out io.Writer, file string, r *Reader) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReader(in)
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			if _, werr := io.WriteString(out, line); werr != nil {
				return werr
			}
			for _, row := range r.Line(strings.TrimRight(line, "\r\n")) {
				if _, werr := fmt.Fprintln(f, row.Format()); werr != nil {
					return werr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
