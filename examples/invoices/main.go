// Command invoices runs the invoices story's two fake services
// (package fakes) for trying reminders.sh by hand:
//
//	go run ./examples/invoices -billing 127.0.0.1:8081 -email 127.0.0.1:8082
//
// The billing API starts with -invoices invoices and issues -add more
// (and updates a few) every -every; the email API prints, every -every,
// how many reminders each invoice got.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/idemsync/idemsync/examples/invoices/fakes"
)

func main() {
	billingAddr := flag.String("billing", "127.0.0.1:8081", "billing API address")
	emailAddr := flag.String("email", "127.0.0.1:8082", "email API address")
	n := flag.Int("invoices", 30, "invoices at start")
	add := flag.Int("add", 5, "invoices issued every -every")
	every := flag.Duration("every", time.Minute, "how often invoices are issued and the deliveries printed")
	faults := flag.Bool("faults", true, "fail and hang some requests of both APIs")
	flag.Parse()
	billing, email := fakes.NewBilling(uint64(time.Now().UnixNano())), fakes.NewEmail(uint64(time.Now().UnixNano()))
	if *faults {
		billing.FailRate, billing.HangRate = 0.05, 0.02
		email.FailBefore, email.FailAfter, email.HangAfter = 0.1, 0.1, 0.02
	}
	billing.Add(*n)
	go func() { log.Fatal(http.ListenAndServe(*billingAddr, billing)) }()
	go func() { log.Fatal(http.ListenAndServe(*emailAddr, email)) }()
	fmt.Printf("billing API: http://%s/invoices\nemail API:   http://%s/send\n", *billingAddr, *emailAddr)
	for range time.Tick(*every) {
		billing.Add(*add)
		billing.Update(2)
		fmt.Printf("%d invoices; reminders delivered more than once: %v\n", len(billing.IDs()), email.Twice())
	}
}
