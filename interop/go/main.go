// Command rmq-go-peer is the Go-client interop peer of the rmq-namesrv test
// suite. It drives github.com/apache/rocketmq-client-go/v2 (version pinned in
// go.mod) against a NameServer and a broker.
//
//	rmq-go-peer produce --namesrv "a;b" --topic T --count N
//	rmq-go-peer consume --namesrv "a;b" --topic T --group G --count N --timeout 60s
//	rmq-go-peer route   --namesrv "a;b" --topic T [--expect present|absent]
//
// --tls (any subcommand) makes the client dial the NameServer and the brokers
// with TLS (the library's WithTls option; it never verifies the server's
// certificate: internal/remote/tcp_conn.go sets InsecureSkipVerify).
//
// --ak/--sk (any subcommand) give the client ACL credentials
// (primitive.Credentials through the WithCredentials option of the producer,
// the consumer and the admin): the library then signs every request to the
// NameServer (namesrvs.SetCredentials -> remote.ACLInterceptor, AccessKey and
// Signature ext fields) and to the brokers.
//
// Every subcommand prints exactly one result line on stdout, a JSON object
// ({"peer":"go","cmd":...,"ok":true|false,...}); the client library's own
// logging goes to stderr at level "error" unless --log-level says otherwise.
// Exit status: 0 success, 1 failure, 2 usage error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	mqerrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

const usage = `usage:
  rmq-go-peer produce --namesrv "a;b" --topic T --count N [--group G] [--prefix P] [--timeout 60s]
  rmq-go-peer consume --namesrv "a;b" --topic T --group G --count N [--prefix P] [--timeout 60s]
  rmq-go-peer route   --namesrv "a;b" --topic T [--expect present|absent] [--timeout 20s]
common flags: --log-level error|warn|info|debug (client library log level, default error)
              --log-file PATH (send the client library log to PATH instead of stderr)
              --tls (TLS to the NameServer and the brokers; the client library accepts any
              server certificate: it dials with InsecureSkipVerify and has no CA option)
              --ak AK --sk SK (ACL credentials: sign every request, NameServer and brokers)
--namesrv defaults to $NAMESRV_ADDR, then 127.0.0.1:9876; addresses are separated by ';'.`

type common struct {
	namesrv  string
	topic    string
	logLevel string
	logFile  string
	timeout  time.Duration
	tls      bool
	ak       string
	sk       string
}

func (c *common) register(fs *flag.FlagSet, defTimeout time.Duration) {
	def := os.Getenv("NAMESRV_ADDR")
	if def == "" {
		def = "127.0.0.1:9876"
	}
	fs.StringVar(&c.namesrv, "namesrv", def, "NameServer address list, ';'-separated")
	fs.StringVar(&c.topic, "topic", "", "topic")
	fs.StringVar(&c.logLevel, "log-level", "error", "client library log level")
	fs.StringVar(&c.logFile, "log-file", "", "write the client library log to this file")
	fs.DurationVar(&c.timeout, "timeout", defTimeout, "overall deadline")
	fs.BoolVar(&c.tls, "tls", false, "TLS to the NameServer and brokers (server certificate not verified by the library)")
	fs.StringVar(&c.ak, "ak", "", "ACL access key (with --sk: requests are signed)")
	fs.StringVar(&c.sk, "sk", "", "ACL secret key")
}

// credentials are the ACL credentials of --ak/--sk (empty: no signing).
func (c *common) credentials() primitive.Credentials {
	return primitive.Credentials{AccessKey: c.ak, SecretKey: c.sk}
}

// signed tells whether requests are signed (both --ak and --sk given).
func (c *common) signed() bool {
	return c.ak != "" && c.sk != ""
}

func (c *common) addrs() []string {
	var out []string
	for _, a := range strings.Split(c.namesrv, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func (c *common) setupLogging() {
	rlog.SetLogLevel(c.logLevel)
	if c.logFile != "" {
		if err := rlog.SetOutputPath(c.logFile); err != nil {
			fmt.Fprintf(os.Stderr, "cannot set log file: %v\n", err)
		}
	}
}

func (c *common) check(fs *flag.FlagSet) {
	if c.topic == "" || len(c.addrs()) == 0 {
		fmt.Fprintf(os.Stderr, "%s: --topic and --namesrv are required\n%s\n", fs.Name(), usage)
		os.Exit(2)
	}
	if (c.ak == "") != (c.sk == "") {
		fmt.Fprintf(os.Stderr, "%s: --ak and --sk go together\n%s\n", fs.Name(), usage)
		os.Exit(2)
	}
}

// result prints the one-line JSON result and exits.
func result(ok bool, fields map[string]interface{}) {
	fields["peer"] = "go"
	fields["ok"] = ok
	b, _ := json.Marshal(fields)
	fmt.Println(string(b))
	if ok {
		os.Exit(0)
	}
	os.Exit(1)
}

// boundedShutdown runs f but gives up after d (client shutdowns can block on
// unreachable brokers).
func boundedShutdown(f func() error, d time.Duration) {
	done := make(chan struct{})
	go func() { _ = f(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		fmt.Fprintln(os.Stderr, "shutdown did not finish in time, exiting anyway")
	}
}

func runProduce(args []string) {
	fs := flag.NewFlagSet("produce", flag.ExitOnError)
	var c common
	c.register(fs, 60*time.Second)
	count := fs.Int("count", 10, "number of messages (sync sends)")
	group := fs.String("group", "interop_go_producer", "producer group")
	prefix := fs.String("prefix", "", "body prefix (default go-<unix nanos>)")
	_ = fs.Parse(args)
	c.check(fs)
	c.setupLogging()
	if *prefix == "" {
		*prefix = fmt.Sprintf("go-%d", time.Now().UnixNano())
	}

	start := time.Now()
	fields := map[string]interface{}{"cmd": "produce", "topic": c.topic, "namesrv": c.namesrv, "requested": *count, "prefix": *prefix, "tls": c.tls, "signed": c.signed()}
	popts := []producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver(c.addrs())),
		producer.WithGroupName(*group),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5 * time.Second),
		producer.WithTls(c.tls),
	}
	if c.signed() {
		popts = append(popts, producer.WithCredentials(c.credentials()))
	}
	p, err := producer.NewDefaultProducer(popts...)
	if err == nil {
		err = p.Start()
	}
	if err != nil {
		fields["error"] = err.Error()
		result(false, fields)
	}
	deadline := start.Add(c.timeout)
	sent, failed := 0, 0
	var firstErr string
	queues := map[string]int{}
	for i := 0; i < *count; i++ {
		if time.Now().After(deadline) {
			failed += *count - i
			if firstErr == "" {
				firstErr = "deadline exceeded"
			}
			break
		}
		msg := primitive.NewMessage(c.topic, []byte(fmt.Sprintf("%s-%d", *prefix, i)))
		msg.WithKeys([]string{fmt.Sprintf("%s-%d", *prefix, i)})
		msg.WithTag("interop")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, msg)
		cancel()
		if err == nil && res.Status == primitive.SendOK {
			sent++
			if res.MessageQueue != nil {
				queues[fmt.Sprintf("%s:%d", res.MessageQueue.BrokerName, res.MessageQueue.QueueId)]++
			}
			continue
		}
		failed++
		if firstErr == "" {
			if err != nil {
				firstErr = err.Error()
			} else {
				firstErr = fmt.Sprintf("send status %d", res.Status)
			}
		}
	}
	boundedShutdown(p.Shutdown, 10*time.Second)
	fields["sent"] = sent
	fields["failed"] = failed
	fields["queues"] = queues
	fields["elapsed_ms"] = time.Since(start).Milliseconds()
	if firstErr != "" {
		fields["error"] = firstErr
	}
	result(sent == *count && failed == 0, fields)
}

func runConsume(args []string) {
	fs := flag.NewFlagSet("consume", flag.ExitOnError)
	var c common
	c.register(fs, 60*time.Second)
	count := fs.Int("count", 10, "number of distinct messages to wait for")
	group := fs.String("group", "", "consumer group (a fresh group starts from the first offset)")
	prefix := fs.String("prefix", "", "count only messages whose body starts with this prefix")
	_ = fs.Parse(args)
	c.check(fs)
	if *group == "" {
		fmt.Fprintf(os.Stderr, "consume: --group is required\n%s\n", usage)
		os.Exit(2)
	}
	c.setupLogging()

	start := time.Now()
	fields := map[string]interface{}{"cmd": "consume", "topic": c.topic, "group": *group, "namesrv": c.namesrv, "requested": *count, "tls": c.tls, "signed": c.signed()}
	var mu sync.Mutex
	seen := map[string]bool{}
	deliveries := 0
	done := make(chan struct{})
	var once sync.Once

	copts := []consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver(c.addrs())),
		consumer.WithGroupName(*group),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithTls(c.tls),
	}
	if c.signed() {
		copts = append(copts, consumer.WithCredentials(c.credentials()))
	}
	pc, err := consumer.NewPushConsumer(copts...)
	if err == nil {
		err = pc.Subscribe(c.topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				deliveries++
				if *prefix != "" && !strings.HasPrefix(string(m.Body), *prefix) {
					continue
				}
				seen[m.MsgId] = true
			}
			if len(seen) >= *count {
				once.Do(func() { close(done) })
			}
			return consumer.ConsumeSuccess, nil
		})
	}
	if err == nil {
		err = pc.Start()
	}
	if err != nil {
		fields["error"] = err.Error()
		result(false, fields)
	}
	ok := false
	select {
	case <-done:
		ok = true
	case <-time.After(c.timeout):
	}
	elapsed := time.Since(start)
	boundedShutdown(pc.Shutdown, 15*time.Second)
	mu.Lock()
	fields["received"] = len(seen)
	fields["deliveries"] = deliveries
	mu.Unlock()
	fields["elapsed_ms"] = elapsed.Milliseconds()
	if !ok {
		fields["error"] = fmt.Sprintf("timeout after %s", c.timeout)
	}
	result(ok, fields)
}

func runRoute(args []string) {
	fs := flag.NewFlagSet("route", flag.ExitOnError)
	var c common
	c.register(fs, 20*time.Second)
	expect := fs.String("expect", "present", "present: succeed if the route has queues; absent: succeed if the client reports topic-not-exist")
	_ = fs.Parse(args)
	c.check(fs)
	if *expect != "present" && *expect != "absent" {
		fmt.Fprintf(os.Stderr, "route: --expect must be present or absent\n")
		os.Exit(2)
	}
	c.setupLogging()

	start := time.Now()
	fields := map[string]interface{}{"cmd": "route", "topic": c.topic, "namesrv": c.namesrv, "expect": *expect, "tls": c.tls, "signed": c.signed()}
	aopts := []admin.AdminOption{admin.WithResolver(primitive.NewPassthroughResolver(c.addrs())), admin.WithTls(c.tls)}
	if c.signed() {
		aopts = append(aopts, admin.WithCredentials(c.credentials()))
	}
	adm, err := admin.NewAdmin(aopts...)
	if err != nil {
		fields["error"] = err.Error()
		result(false, fields)
	}
	type res struct {
		mqs      []*primitive.MessageQueue
		clusters []string
		err      error
	}
	ch := make(chan res, 1)
	go func() {
		// Publish queues: one GET_ROUTEINFO_BY_TOPIC (105) to the NameServer,
		// then the cluster names from a second route query.
		mqs, err := adm.FetchPublishMessageQueues(context.Background(), c.topic)
		if err != nil {
			ch <- res{err: err}
			return
		}
		clusters, err := adm.FetchClusterList(c.topic)
		ch <- res{mqs: mqs, clusters: clusters, err: err}
	}()
	var r res
	select {
	case r = <-ch:
	case <-time.After(c.timeout):
		r = res{err: fmt.Errorf("timeout after %s", c.timeout)}
	}
	boundedShutdown(adm.Close, 5*time.Second)
	fields["elapsed_ms"] = time.Since(start).Milliseconds()

	if r.err != nil {
		notExist := errors.Is(r.err, mqerrors.ErrTopicNotExist)
		if notExist {
			fields["result"] = "TOPIC_NOT_EXIST"
		} else {
			fields["result"] = "ERROR"
		}
		fields["error"] = r.err.Error()
		result(notExist && *expect == "absent", fields)
	}
	queues := make([]string, 0, len(r.mqs))
	brokers := map[string]bool{}
	for _, mq := range r.mqs {
		queues = append(queues, fmt.Sprintf("%s:%d", mq.BrokerName, mq.QueueId))
		brokers[mq.BrokerName] = true
	}
	sort.Strings(queues)
	sort.Strings(r.clusters)
	names := make([]string, 0, len(brokers))
	for b := range brokers {
		names = append(names, b)
	}
	sort.Strings(names)
	fields["result"] = "FOUND"
	fields["write_queues"] = queues
	fields["brokers"] = names
	fields["clusters"] = r.clusters
	result(len(queues) > 0 && *expect == "present", fields)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	// Quiet by default even before flags are parsed (the library logs at
	// info level unless ROCKETMQ_GO_LOG_LEVEL says otherwise).
	if os.Getenv("ROCKETMQ_GO_LOG_LEVEL") == "" {
		rlog.SetLogLevel("error")
	}
	switch os.Args[1] {
	case "produce":
		runProduce(os.Args[2:])
	case "consume":
		runConsume(os.Args[2:])
	case "route":
		runRoute(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Println(usage)
	default:
		fmt.Fprintf(os.Stderr, "unknown subcommand %q\n%s\n", os.Args[1], usage)
		os.Exit(2)
	}
}
