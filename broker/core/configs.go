package core

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/control"
)

// handleDescribeConfigs describes topics by the two configs this broker
// honours, as the controller recorded them: a client (the tester among
// them) can then see that a topic really has the min.insync.replicas and
// election policy it asked for, which Metadata does not say.
func (b *Broker) handleDescribeConfigs(r *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, res := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		t, _ := b.md.Lookup(res.ResourceName, -1)
		switch {
		case res.ResourceType == kmsg.ConfigResourceTypeBroker && res.ResourceName == strconv.Itoa(int(b.cfg.BrokerID)):
			// What a tester that did not start this broker needs to know
			// to slow a follower out of the ISR.
			for _, c := range b.brokerConfigs() {
				if res.ConfigNames == nil || slices.Contains(res.ConfigNames, c.Name) {
					rr.Configs = append(rr.Configs, c)
				}
			}
		case res.ResourceType != kmsg.ConfigResourceTypeTopic:
			rr.ErrorCode = kerr.InvalidRequest.Code
			rr.ErrorMessage = kmsg.StringPtr("only topic configs and this broker's can be described")
		case t == nil:
			rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			for _, c := range topicConfigs(t) {
				if res.ConfigNames == nil || slices.Contains(res.ConfigNames, c.Name) {
					rr.Configs = append(rr.Configs, c)
				}
			}
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func configEntry(name, value string, typ kmsg.ConfigType, src kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value, c.ConfigType, c.Source = name, &value, typ, src
	return c
}

// brokerConfigs are the replication settings this broker was started
// with, as Kafka names them.
func (b *Broker) brokerConfigs() []kmsg.DescribeConfigsResponseResourceConfig {
	src := kmsg.ConfigSourceStaticBrokerConfig
	return []kmsg.DescribeConfigsResponseResourceConfig{
		configEntry("replica.lag.time.max.ms", strconv.FormatInt(b.cfg.ReplicaLagTimeMaxMs, 10), kmsg.ConfigTypeLong, src),
		configEntry("replica.lag.max.messages", strconv.FormatInt(b.cfg.ReplicaLagMaxMessages, 10), kmsg.ConfigTypeLong, src),
	}
}

func topicConfigs(t *control.Topic) []kmsg.DescribeConfigsResponseResourceConfig {
	entry := func(name, value string, typ kmsg.ConfigType) kmsg.DescribeConfigsResponseResourceConfig {
		return configEntry(name, value, typ, kmsg.ConfigSourceDynamicTopicConfig)
	}
	return []kmsg.DescribeConfigsResponseResourceConfig{
		entry("min.insync.replicas", strconv.Itoa(int(t.MinInsyncReplicas)), kmsg.ConfigTypeInt),
		entry("unclean.leader.election.enable", strconv.FormatBool(t.Election == control.Unclean), kmsg.ConfigTypeBoolean),
	}
}
