package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

func (a *app) credentialsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "credentials",
		Short: "Show the lab's credentials again (Ray token, Jupyter token, Grafana admin, MinIO)",
		Long: `credentials prints the secrets 'mltrain up' generated for this lab and printed
once: the Ray dashboard token, the Jupyter token, Grafana's admin password,
MinIO's root user (mltrain's own, and the console's login) and the lab user
that Jupyter and the Ray nodes use (limited to the bucket "ray").
It only reads the state dir's credentials.json; it never creates secrets.
--json prints them as that file holds them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := a.StateDir()
			c, err := dir.Credentials()
			if err != nil {
				return err
			}
			// The URLs come from the last up; a lab only rendered has none.
			var urls plan.URLs
			if st, err := dir.State(); err == nil {
				urls = st.URLs
			}
			if a.json {
				return printJSON(a.out, map[string]any{"file": dir.File(state.CredentialsFile), "credentials": c, "urls": urls})
			}
			var b strings.Builder
			fmt.Fprintf(&b, "Credentials of the lab in %s:\n", dir)
			writeCredentials(&b, urls, c)
			_, err = fmt.Fprint(a.out, b.String())
			return err
		},
	}
}

// writeURLs lists what students open in a browser (no secret in them).
func writeURLs(w io.Writer, u plan.URLs) {
	for _, pg := range service.Pages() {
		note := ""
		if pg.Note != "" {
			note = "  (" + pg.Note + ")"
		}
		fmt.Fprintf(w, "  %-15s %s%s\n", pg.Title, u[pg.Key], note)
	}
}

// writeCredentials lists the lab's secrets, with the URL each one opens
// when the lab has been up.
func writeCredentials(w io.Writer, u plan.URLs, c plan.Credentials) {
	fmt.Fprintf(w, "  Ray dashboard token   %s\n", c.RayAuthToken)
	if j := u[service.PageJupyter]; j != "" {
		fmt.Fprintf(w, "  Jupyter               %s?token=%s\n", j, c.JupyterToken)
	} else {
		fmt.Fprintf(w, "  Jupyter token         %s\n", c.JupyterToken)
	}
	fmt.Fprintf(w, "  Grafana admin         %s / %s\n", plan.GrafanaAdminUser, c.GrafanaAdminPassword)
	fmt.Fprintf(w, "  MinIO root            %s / %s  (the console's login; mltrain's own)\n", c.MinIOAccessKey, c.MinIOSecretKey)
	fmt.Fprintf(w, "  MinIO lab user        %s / %s  (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY in Jupyter and Ray; bucket \"ray\" only)\n",
		c.MinIOLabAccessKey, c.MinIOLabSecretKey)
}
