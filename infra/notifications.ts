import { Annotations, type RemovalPolicy, SecretValue, Stack, Token } from "aws-cdk-lib";
import * as events from "aws-cdk-lib/aws-events";
import * as eventTargets from "aws-cdk-lib/aws-events-targets";
import * as sns from "aws-cdk-lib/aws-sns";
import * as subscriptions from "aws-cdk-lib/aws-sns-subscriptions";
import type * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { EVENT_SOURCE } from "../functions/config.ts";
import { escapeFor, type MarkupFormat } from "../statemachine/notification-markup.ts";
import {
  DEFAULT_TEMPLATES,
  NOTIFICATION_TRIGGERS,
  type NotificationSubscription,
  type NotificationSubscriptionInput,
  NotificationSubscriptionSchema,
  type NotificationTrigger,
  parseTemplate,
  TEMPLATE_FIELDS,
  type TemplateField,
  type TemplatePart,
} from "../statemachine/notifications.ts";
import { type DeadLetters, deadLetters } from "./dead-letters.ts";
import { acknowledge } from "./nag.ts";

/** A Slack incoming webhook (`https://hooks.slack.com/services/…`). */
export interface SlackService {
  readonly type: "slack";
  /**
   * The webhook's URL. It is a credential: give it as `SecretValue.secretsManager(...)` (a
   * CloudFormation dynamic reference, resolved at deploy time) rather than a plain string.
   */
  readonly webhookUrl: string | SecretValue;
}

/** A Microsoft Teams incoming webhook or Workflows ("Post to a channel when a webhook request is received") URL. */
export interface TeamsService {
  readonly type: "teams";
  /** The webhook's URL; a credential like Slack's (see {@link SlackService.webhookUrl}). */
  readonly webhookUrl: string | SecretValue;
}

/** Any HTTPS endpoint taking a JSON POST, with headers kept in Secrets Manager. */
export interface WebhookService {
  readonly type: "webhook";
  readonly url: string | SecretValue;
  /**
   * Headers sent with every call, their values from Secrets Manager
   * (`SecretValue.secretsManager("arn", { jsonField: "token" })`), e.g. `{ Authorization: … }`.
   * EventBridge keeps them in the connection's own secret.
   */
  readonly headers?: Readonly<Record<string, SecretValue>>;
}

/** Email through an SNS topic the controller creates, one per email service. */
export interface EmailService {
  readonly type: "email";
  /** Addresses subscribed to the topic (each confirms by the link SNS sends). */
  readonly addresses: readonly string[];
}

export type NotificationService = SlackService | TeamsService | WebhookService | EmailService;

/** Argo Notifications' services, templates and default subscriptions, for every rollout of a controller. */
export interface NotificationsProps {
  /** The services by name: the name subscriptions use (`…subscribe.on-rollout-aborted.<name>`). */
  readonly services: Readonly<Record<string, NotificationService>>;
  /**
   * The message of each trigger, with `{{.field}}`s from `TEMPLATE_FIELDS` (docs/notifications.md).
   * @default Argo's catalog messages (`DEFAULT_TEMPLATES`)
   */
  readonly templates?: Readonly<Partial<Record<NotificationTrigger, string>>>;
  /** Subscriptions of every rollout, added to each rollout's own (its spec's and `addRollout`'s). */
  readonly subscriptions?: readonly NotificationSubscriptionInput[];
  /**
   * The email service whose topic each rollout's failed-executions alarm notifies.
   * @default the only email service when there is exactly one, else none
   */
  readonly alarmService?: string;
}

/** Slack's documented limit for an incoming webhook: one message per second. */
const WEBHOOK_RATE_PER_SECOND = 1;
const SERVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,512}$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Problems of the `notifications` prop (empty: all good), each naming its path. */
export function notificationsProblems(props: NotificationsProps, embedded: boolean): string[] {
  const problems: string[] = [];
  const services = Object.entries(props.services ?? {});
  if (services.length === 0) problems.push("notifications.services: name at least one service");
  for (const [name, service] of services) {
    const at = `notifications.services.${name}`;
    if (!SERVICE_NAME.test(name))
      problems.push(`${at}: a service name is letters, digits, '-' and '_' (up to 64)`);
    switch (service?.type) {
      case "slack":
      case "teams":
        problems.push(...urlProblems(service.webhookUrl, `${at}.webhookUrl`, embedded));
        break;
      case "webhook":
        problems.push(...urlProblems(service.url, `${at}.url`, embedded));
        for (const [header, value] of Object.entries(service.headers ?? {})) {
          if (!HEADER_NAME.test(header)) problems.push(`${at}.headers: "${header}" is not a header name`);
          if (!SecretValue.isSecretValue(value))
            problems.push(`${at}.headers.${header}: give a SecretValue (from Secrets Manager), not a string`);
        }
        break;
      case "email":
        if (!Array.isArray(service.addresses) || service.addresses.length === 0)
          problems.push(`${at}.addresses: give at least one address`);
        for (const address of service.addresses ?? [])
          if (!Token.isUnresolved(address) && !EMAIL.test(address))
            problems.push(`${at}.addresses: "${address}" is not an email address`);
        break;
      default:
        problems.push(
          `${at}.type: ${JSON.stringify((service as { type?: unknown })?.type)} is not slack, teams, webhook or email`,
        );
    }
  }
  for (const [trigger, template] of Object.entries(props.templates ?? {})) {
    if (!Object.hasOwn(NOTIFICATION_TRIGGERS, trigger)) {
      problems.push(
        `notifications.templates: unknown trigger "${trigger}": use one of ${Object.keys(NOTIFICATION_TRIGGERS).join(", ")}`,
      );
      continue;
    }
    const parsed = parseTemplate(String(template));
    if ("problems" in parsed)
      problems.push(...parsed.problems.map((p) => `notifications.templates.${trigger}: ${p}`));
  }
  (props.subscriptions ?? []).forEach((s, i) => {
    problems.push(...subscriptionProblems(s, props, `notifications.subscriptions[${i}]`));
  });
  if (
    props.alarmService !== undefined &&
    !(
      Object.hasOwn(props.services ?? {}, props.alarmService) &&
      props.services[props.alarmService]?.type === "email"
    )
  )
    problems.push(
      `notifications.alarmService: "${props.alarmService}" is not an email service of notifications.services`,
    );
  return problems;
}

/** A subscription's problems: its shape, and a service the controller does not have. */
export function subscriptionProblems(
  subscription: NotificationSubscriptionInput,
  props: NotificationsProps | undefined,
  at: string,
): string[] {
  const parsed = NotificationSubscriptionSchema.safeParse(subscription);
  if (!parsed.success) return parsed.error.issues.map((i) => `${[at, ...i.path].join(".")}: ${i.message}`);
  if (!props)
    return [`${at}: the controller has no notifications (give RolloutControllerProps.notifications)`];
  if (!Object.hasOwn(props.services, parsed.data.service))
    return [
      `${at}.service: no service "${parsed.data.service}" in notifications.services (${Object.keys(props.services).join(", ")})`,
    ];
  return [];
}

function urlProblems(url: string | SecretValue, at: string, embedded: boolean): string[] {
  if (SecretValue.isSecretValue(url) || Token.isUnresolved(url)) return [];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [`${at}: "${url}" is not a URL`];
  }
  const local = parsed.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(parsed.hostname);
  if (parsed.protocol === "https:" || (embedded && local)) return [];
  return [
    `${at}: "${parsed.protocol}//${parsed.host}…" must be https (EventBridge API destinations call HTTPS only${embedded ? "; http to this machine is accepted in the embedded runtime" : ""})`,
  ];
}

/** The endpoint, its connection and the role EventBridge calls it with. */
interface Destination {
  readonly service: SlackService | TeamsService | WebhookService;
  readonly apiDestination: events.ApiDestination;
}

/**
 * Argo Notifications on AWS: for each service an EventBridge API destination (Slack, Teams, a
 * webhook: a connection holding its headers, a rate limit) or an SNS topic (email), shared by the
 * controller's rollouts; for each rollout and subscription a rule on the lifecycle events of that
 * rollout whose targets build the service's JSON with an input transformer. What could not be
 * delivered after EventBridge's retries waits in a dead-letter queue with an alarm.
 */
export class Notifications extends Construct {
  readonly #props: NotificationsProps;
  readonly #eventBus: events.IEventBus;
  readonly #destinations = new Map<string, Destination>();
  readonly #topics = new Map<string, sns.Topic>();
  /** Deliveries EventBridge gave up on (an endpoint down for a day, a refused message). */
  readonly deadLetters: DeadLetters;

  constructor(
    scope: Construct,
    id: string,
    options: { props: NotificationsProps; eventBus: events.IEventBus; removalPolicy: RemovalPolicy },
  ) {
    super(scope, id);
    this.#props = options.props;
    this.#eventBus = options.eventBus;
    this.deadLetters = deadLetters(this, "DeadLetters", {
      what: "notifications (Slack, Teams, webhook, email)",
      removalPolicy: options.removalPolicy,
    });
    for (const [name, service] of Object.entries(options.props.services)) {
      if (service.type === "email") this.#topics.set(name, this.#emailTopic(name, service));
      else this.#destinations.set(name, { service, apiDestination: this.#apiDestination(name, service) });
    }
  }

  /** The topic of the alarm service (`alarmService`, or the only email service). */
  get alarmTopic(): sns.ITopic | undefined {
    const name =
      this.#props.alarmService ?? (this.#topics.size === 1 ? [...this.#topics.keys()][0] : undefined);
    return name === undefined ? undefined : this.#topics.get(name);
  }

  /** The SNS topic of an email service. */
  topic(service: string): sns.ITopic | undefined {
    return this.#topics.get(service);
  }

  /** The API destination of a Slack, Teams or webhook service. */
  apiDestination(service: string): events.ApiDestination | undefined {
    return this.#destinations.get(service)?.apiDestination;
  }

  /**
   * One rule per trigger and service of a rollout: the rollout's lifecycle event → the service,
   * with the trigger's template. Subscriptions naming the same trigger and service are merged.
   */
  subscribe(
    scope: Construct,
    rollout: string,
    stateMachine: sfn.StateMachine,
    list: readonly NotificationSubscription[],
  ): events.Rule[] {
    const merged = new Map<string, NotificationSubscription>();
    for (const s of [
      ...list,
      ...(this.#props.subscriptions ?? []).map((s) => NotificationSubscriptionSchema.parse(s)),
    ]) {
      const key = `${s.trigger} ${s.service}`;
      const before = merged.get(key);
      merged.set(key, {
        ...s,
        recipients: [...new Set([...(before?.recipients ?? []), ...s.recipients])],
      });
    }
    const stack = Stack.of(this);
    const constants: Record<string, string> = {
      stateMachineArn: stateMachine.stateMachineArn,
      consoleUrl: `https://${stack.region}.console.aws.amazon.com/states/home?region=${stack.region}#/statemachines/view/${stateMachine.stateMachineArn}`,
    };
    const rules: events.Rule[] = [];
    for (const s of merged.values()) {
      if (!Object.hasOwn(this.#props.services, s.service)) continue;
      const service = this.#props.services[s.service];
      if (!service) continue;
      const template = this.#props.templates?.[s.trigger] ?? DEFAULT_TEMPLATES[s.trigger];
      const parsed = parseTemplate(template);
      if ("problems" in parsed) continue; // refused with the props
      const values = { ...constants, trigger: s.trigger };
      const text = render(parsed.parts, values, markupOf(service.type));
      const rule = new events.Rule(scope, `Notify${pascal(s.trigger)}${pascal(s.service)}`, {
        eventBus: this.#eventBus,
        description: `${s.trigger} of rollout ${rollout} → ${s.service} (${service.type})`,
        eventPattern: {
          source: [EVENT_SOURCE],
          detailType: [NOTIFICATION_TRIGGERS[s.trigger]],
          detail: { rollout: [rollout] },
        },
      });
      const common = { deadLetterQueue: this.deadLetters.queue, retryAttempts: 185 } as const;
      if (service.type === "email") {
        const topic = this.#topics.get(s.service) as sns.Topic;
        rule.addTarget(
          new eventTargets.SnsTopic(topic, {
            ...common,
            message: events.RuleTargetInput.fromText(`${text}\n\n${constants.consoleUrl}`),
          }),
        );
        if (s.recipients.length > 0) ignoredRecipients(scope, s);
      } else {
        const destination = this.#destinations.get(s.service) as Destination;
        const channels: (string | undefined)[] =
          service.type === "slack" && s.recipients.length > 0 ? s.recipients : [undefined];
        if (service.type !== "slack" && s.recipients.length > 0) ignoredRecipients(scope, s);
        for (const channel of channels) {
          rule.addTarget(
            new eventTargets.ApiDestination(destination.apiDestination, {
              ...common,
              event: events.RuleTargetInput.fromObject(
                body(service.type, text, s.trigger, constants.consoleUrl as string, channel),
              ),
            }),
          );
        }
      }
      rules.push(rule);
    }
    return rules;
  }

  #apiDestination(
    name: string,
    service: SlackService | TeamsService | WebhookService,
  ): events.ApiDestination {
    const url = service.type === "webhook" ? service.url : service.webhookUrl;
    const headers = service.type === "webhook" ? Object.entries(service.headers ?? {}) : [];
    const [first, ...rest] = headers;
    // A connection needs an authorization; Slack and Teams take none (the URL is the credential),
    // so they get a constant header naming the sender, which they ignore.
    const authorization = first
      ? events.Authorization.apiKey(first[0], first[1])
      : events.Authorization.apiKey("x-sfn-rollouts", SecretValue.unsafePlainText("notification"));
    const connection = new events.Connection(this, `${pascal(name)}Connection`, {
      description: `sfn-rollouts notifications: ${name} (${service.type})`,
      authorization,
      ...(rest.length > 0
        ? {
            headerParameters: Object.fromEntries(
              rest.map(([k, v]) => [k, events.HttpParameter.fromSecret(v)]),
            ),
          }
        : {}),
    });
    return new events.ApiDestination(this, `${pascal(name)}Destination`, {
      description: `sfn-rollouts notifications: ${name} (${service.type})`,
      connection,
      endpoint: SecretValue.isSecretValue(url) ? url.unsafeUnwrap() : url,
      httpMethod: events.HttpMethod.POST,
      rateLimitPerSecond: WEBHOOK_RATE_PER_SECOND,
    });
  }

  #emailTopic(name: string, service: EmailService): sns.Topic {
    const topic = new sns.Topic(this, `${pascal(name)}Topic`, {
      displayName: `sfn-rollouts ${name}`,
      enforceSSL: true,
    });
    for (const address of service.addresses)
      topic.addSubscription(new subscriptions.EmailSubscription(address));
    acknowledge(
      topic,
      "AwsSolutions-SNS2",
      "rollout notifications carry no secrets; EventBridge and CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed key, and a customer key for email text is not worth its cost",
    );
    return topic;
  }
}

function ignoredRecipients(scope: Construct, s: NotificationSubscription): void {
  Annotations.of(scope).addWarningV2(
    "sfn-rollouts:notificationRecipients",
    `${s.trigger}.${s.service}: recipients ${s.recipients.join(";")} are ignored: only Slack sends to channels; other services send where their settings say`,
  );
}

/** The markup a service reads its text as: Slack's mrkdwn, Teams' Markdown; none for a webhook or email. */
function markupOf(type: NotificationService["type"]): MarkupFormat | undefined {
  return type === "slack" || type === "teams" ? type : undefined;
}

/**
 * A template's parts as one string: the template's own text as the operator wrote it, fields as
 * EventBridge placeholders, constants as their value. For a markup format every value is escaped
 * by its rules (a field through its escaped copy in the event), so only the template's text can
 * mention or link.
 */
function render(
  parts: readonly TemplatePart[],
  constants: Readonly<Record<string, string>>,
  markup: MarkupFormat | undefined,
): string {
  return parts
    .map((part) => {
      if ("text" in part) return part.text;
      const source: (typeof TEMPLATE_FIELDS)[TemplateField] = TEMPLATE_FIELDS[part.field];
      if ("constant" in source) {
        const value = constants[source.constant] ?? "";
        // A token (an ARN resolved at deploy) is left whole: its text has none of the markup's characters.
        return markup === undefined || Token.isUnresolved(value) ? value : (escapeFor(markup, value) ?? "");
      }
      const escaped = markup !== undefined && "escaped" in source ? source.escaped : undefined;
      return events.EventField.fromPath(
        escaped === undefined ? source.path : `$.detail.escaped.${markup}.${escaped}`,
      );
    })
    .join("");
}

/** The JSON each kind of service takes. */
function body(
  type: "slack" | "teams" | "webhook",
  text: string,
  trigger: NotificationTrigger,
  consoleUrl: string,
  channel: string | undefined,
): Record<string, unknown> {
  const link = "Open in Step Functions";
  switch (type) {
    case "slack":
      return {
        text,
        blocks: [
          // verbatim: Slack links and mentions only what the text marks up (`<…>`), never a bare
          // `@here` or `#channel` a value carries.
          { type: "section", text: { type: "mrkdwn", text, verbatim: true } },
          {
            type: "actions",
            elements: [{ type: "button", text: { type: "plain_text", text: link }, url: consoleUrl }],
          },
        ],
        ...(channel === undefined ? {} : { channel }),
      };
    case "teams":
      return {
        type: "message",
        attachments: [
          {
            contentType: "application/vnd.microsoft.card.adaptive",
            content: {
              $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
              type: "AdaptiveCard",
              version: "1.4",
              body: [{ type: "TextBlock", text, wrap: true }],
              actions: [{ type: "Action.OpenUrl", title: link, url: consoleUrl }],
            },
          },
        ],
      };
    case "webhook":
      return {
        trigger,
        event: events.EventField.fromPath("$.detail-type"),
        message: text,
        rollout: events.EventField.fromPath("$.detail.rollout"),
        consoleUrl,
        detail: events.EventField.fromPath("$.detail"),
      };
  }
}

const pascal = (s: string) =>
  s
    .split(/[-_]/)
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join("");
