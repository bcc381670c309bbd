package main

import (
	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/render"
)

func newPricesCmd() *cobra.Command {
	var file string
	var asYAML bool
	cmd := &cobra.Command{
		Use:   "prices",
		Short: "List the API prices, GPU-hour presets and board powers reports use, with their sources",
		Long: `Prices lists what a report prices with: the hosted API prices it compares
self-hosting against, the GPU-hour presets --gpu-preset names, and the board
powers assumed when a run measured no power, each with its date and where it
came from. A price quoted by another site than the vendor's is marked
secondary: check it before you quote it.

With --prices FILE, the table a report given that file would use. With
--yaml, the built-in table as YAML, to edit into a file for --prices.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asYAML {
				_, err := cmd.OutOrStdout().Write(analyze.BuiltinPricesYAML())
				return err
			}
			t, source, err := analyze.LoadPrices(file)
			if err != nil {
				return err
			}
			return render.PriceList(cmd.OutOrStdout(), t, source)
		},
	}
	cmd.Flags().StringVar(&file, "prices", "", "YAML price table whose sections replace the built-in ones, as headroom report --prices takes it")
	cmd.Flags().BoolVar(&asYAML, "yaml", false, "write the built-in table as YAML")
	return cmd
}
